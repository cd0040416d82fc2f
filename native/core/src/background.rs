//! A small, bounded pool for work taken off the request path: Static tables
//! built while a constraint already serves Dynamic masks
//! ([`Constraint::with_background_static`](crate::Constraint::with_background_static)).
//!
//! Bounded so that a burst of new grammars cannot start a burst of
//! compiles: jobs wait in a FIFO queue for one of `GLRMASK_BACKGROUND_THREADS`
//! workers (default 1; each Static build is itself parallel over
//! `GLRMASK_NUM_THREADS`). Workers are started on first use and live for
//! the process.

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
    loop {
        let job = match receiver.lock().unwrap_or_else(|e| e.into_inner()).recv() {
            Ok(job) => job,
            Err(_) => return,
        };
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
}

fn worker_count() -> usize {
    std::env::var("GLRMASK_BACKGROUND_THREADS").ok().and_then(|v| v.parse().ok()).filter(|&n| n > 0).unwrap_or(1)
}
