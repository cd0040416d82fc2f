//! A small, bounded pool for work taken off the request path: Static tables
//! built while a constraint already serves Dynamic masks
//! ([`Constraint::with_background_static`](crate::Constraint::with_background_static)).
//!
//! Bounded so that a burst of new grammars cannot start a burst of
//! compiles: jobs wait in a FIFO queue for one of `GLRMASK_BACKGROUND_THREADS`
//! workers (default 1; each Static build is itself parallel over
//! `GLRMASK_NUM_THREADS`). Workers are started on first use and live for
//! the process.
//!
//! Workers run at the lowest CPU priority (nice 19 on Linux, where the
//! threads a Static build starts inherit it): a build only takes the cores
//! the request path leaves idle. In a server the request path is decoding,
//! and a build that competes with it at equal priority slowed decoding to a
//! third of its unconstrained rate on 2 cores (issue 46); a Static build
//! only makes masks faster, so it is the work that waits.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

/// Workers' stacks: the compiler recurses on grammar structure.
const STACK_BYTES: usize = 256 << 20;

static QUEUE: OnceLock<Mutex<Sender<Job>>> = OnceLock::new();

/// Run `job` on the background pool (FIFO). A panicking job is contained:
/// it fails alone and the worker goes on.
pub fn submit(job: impl FnOnce() + Send + 'static) {
    let queue = QUEUE.get_or_init(start_workers);
    let sender = queue.lock().unwrap_or_else(|e| e.into_inner());
    // Workers never exit, so the receiver lives as long as the process.
    let _ = sender.send(Box::new(job));
}

fn start_workers() -> Mutex<Sender<Job>> {
    let (sender, receiver) = channel::<Job>();
    let receiver = Arc::new(Mutex::new(receiver));
    for i in 0..worker_count() {
        let receiver = receiver.clone();
        std::thread::Builder::new()
            .name(format!("glrmask-background-{i}"))
            .stack_size(STACK_BYTES)
            .spawn(move || work(&receiver))
            .expect("spawn a glrmask background worker");
    }
    Mutex::new(sender)
}

fn work(receiver: &Mutex<Receiver<Job>>) {
    lower_priority();
    loop {
        let job = match receiver.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
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

fn worker_count() -> usize {
    std::env::var("GLRMASK_BACKGROUND_THREADS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(1)
}

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
        submit(move || {
            let spawned = std::thread::scope(|s| s.spawn(own_nice).join().unwrap());
            let _ = tx.send((own_nice(), spawned));
        });
        let (job, spawned) = rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap();
        assert_eq!((job, spawned), (LOWEST_PRIORITY, LOWEST_PRIORITY));
        assert_eq!(own_nice(), caller, "the caller's priority is left alone");
    }
}
