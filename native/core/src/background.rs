//! A small, bounded pool for work taken off the request path: Static tables
//! built while a constraint already serves Dynamic masks
//! ([`Compiler::compile`](crate::compiler::Compiler::compile) with `background`).
//!
//! Bounded so that a burst of new grammars cannot start a burst of
//! compiles: jobs wait in a FIFO queue for one of a few workers (a
//! [`Compiler`](crate::compiler::Compiler) session owns one pool, sized by
//! its `background_threads`; each Static build is itself parallel). Workers
//! are started on first use and end with the pool.
//!
//! Workers run at the lowest CPU priority (nice 19 on Linux, where the
//! threads a Static build starts inherit it): a build only takes the cores
//! the request path leaves idle. In a server the request path is decoding,
//! and a build that competes with it at equal priority slowed decoding to a
//! third of its unconstrained rate on 2 cores (issue 46); a Static build
//! only makes masks faster, so it is the work that waits.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};

type Job = Box<dyn FnOnce() + Send>;

/// Workers' stacks: the compiler recurses on grammar structure.
const STACK_BYTES: usize = 256 << 20;

/// A FIFO queue served by a fixed number of workers, started on first use.
/// Dropping the pool lets its workers finish the jobs already queued, then
/// exit.
pub struct Pool {
    workers: usize,
    queue: Mutex<Option<Sender<Job>>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pool {{ workers: {} }}", self.workers)
    }
}

impl Pool {
    /// A pool of `workers` threads (at least one).
    pub fn new(workers: usize) -> Pool {
        Pool { workers: workers.max(1), queue: Mutex::new(None) }
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    /// Run `job` on the pool (FIFO). A panicking job is contained: it fails
    /// alone and the worker goes on.
    pub fn submit(&self, job: impl FnOnce() + Send + 'static) {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let sender = queue.get_or_insert_with(|| self.start_workers());
        // Workers exit only once this sender is dropped, so the send succeeds.
        let _ = sender.send(Box::new(job));
    }

    fn start_workers(&self) -> Sender<Job> {
        let (sender, receiver) = channel::<Job>();
        let receiver = Arc::new(Mutex::new(receiver));
        for i in 0..self.workers {
            let receiver = receiver.clone();
            std::thread::Builder::new()
                .name(format!("glrmask-background-{i}"))
                .stack_size(STACK_BYTES)
                .spawn(move || work(&receiver))
                .expect("spawn a glrmask background worker");
        }
        sender
    }
}

fn work(receiver: &Mutex<Receiver<Job>>) {
    lower_priority();
    loop {
        let job = match receiver.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            // The pool was dropped and its queue is empty.
            Err(_) => return,
        };
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

/// The lowest scheduling priority for the calling thread (best effort: an
/// error leaves it as it was).
#[cfg(target_os = "linux")]
fn lower_priority() {
    // SAFETY: plain syscalls on this thread's own id, with no pointers.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, LOWEST_PRIORITY);
    }
}

#[cfg(not(target_os = "linux"))]
fn lower_priority() {}

/// The nice value of background workers (Linux: 19 is the lowest priority).
pub const LOWEST_PRIORITY: i32 = 19;

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn own_nice() -> i32 {
        // SAFETY: as in `lower_priority`.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::syscall(libc::SYS_gettid) as libc::id_t) }
    }

    #[test]
    fn jobs_and_the_threads_they_start_run_at_the_lowest_priority() {
        let (tx, rx) = channel();
        let caller = own_nice();
        Pool::new(1).submit(move || {
            let spawned = std::thread::scope(|s| s.spawn(own_nice).join().unwrap());
            let _ = tx.send((own_nice(), spawned));
        });
        let (job, spawned) = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert_eq!((job, spawned), (LOWEST_PRIORITY, LOWEST_PRIORITY));
        assert_eq!(own_nice(), caller, "the caller's priority is left alone");
    }
}
