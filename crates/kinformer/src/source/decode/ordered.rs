//! The one pipeline that decodes a list or a watch on every core while its body downloads:
//! jobs (a batch of items or events each) run on tokio's blocking pool, at most
//! [`DECODE_JOBS`] at a time, and their outputs come out in the order the jobs were made, so
//! objects leave in the server's order. Reading goes on while the jobs run, until the pipeline
//! is full: memory stays bounded by the jobs' batches.

use std::collections::VecDeque;
use std::future::Future;

use tokio::task::{JoinError, JoinHandle};

use super::DECODE_JOBS;

/// Decoding jobs in flight, oldest first.
pub(crate) struct Ordered<T> {
    jobs: VecDeque<JoinHandle<T>>,
}

/// What [`Ordered::next`] saw first.
pub(crate) enum Step<T, R> {
    /// The oldest job finished (an `Err` if it panicked).
    Decoded(Result<T, JoinError>),
    /// The read finished.
    Read(R),
}

impl<T: Send + 'static> Ordered<T> {
    pub(crate) fn new() -> Self {
        Self {
            jobs: VecDeque::new(),
        }
    }

    /// Whether no job is in flight.
    pub(crate) fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    /// Whether another job may start ([`DECODE_JOBS`] at most).
    pub(crate) fn has_room(&self) -> bool {
        self.jobs.len() < DECODE_JOBS
    }

    /// Starts a job on the blocking pool, after every job already in flight.
    pub(crate) fn spawn(&mut self, job: impl FnOnce() -> T + Send + 'static) {
        self.jobs.push_back(tokio::task::spawn_blocking(job));
    }

    /// The oldest job's output, once it has finished; `None` when no job is in flight.
    pub(crate) async fn oldest(&mut self) -> Option<Result<T, JoinError>> {
        let job = self.jobs.front_mut()?;
        let done = job.await;
        self.jobs.pop_front();
        Some(done)
    }

    /// Whichever comes first: the oldest job's output, or `read`, which is only polled when
    /// `may_read` (the caller says no while a full batch waits or the body is over). With no
    /// job in flight it is `read`, whatever `may_read` says.
    pub(crate) async fn next<R>(
        &mut self,
        may_read: bool,
        read: impl Future<Output = R>,
    ) -> Step<T, R> {
        let Some(job) = self.jobs.front_mut() else {
            return Step::Read(read.await);
        };
        if !may_read {
            let done = job.await;
            self.jobs.pop_front();
            return Step::Decoded(done);
        }
        tokio::select! {
            biased;
            done = job => {
                self.jobs.pop_front();
                Step::Decoded(done)
            }
            r = read => Step::Read(r),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// Jobs that finish out of order still come out in the order they were made, and reading
    /// goes on while they run.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn outputs_leave_in_the_order_the_jobs_were_made() {
        let mut pipeline = Ordered::new();
        // the first job is the slowest
        for i in 0..DECODE_JOBS as u64 {
            pipeline.spawn(move || {
                std::thread::sleep(Duration::from_millis(40 - 10 * i));
                i
            });
        }
        assert!(!pipeline.has_room(), "bounded at DECODE_JOBS");
        let mut reads = 0;
        let mut out = Vec::new();
        while !pipeline.is_empty() {
            let read = tokio::time::sleep(Duration::from_millis(5));
            match pipeline.next(true, read).await {
                Step::Decoded(r) => out.push(r.unwrap()),
                Step::Read(()) => reads += 1,
            }
        }
        assert_eq!(out, [0, 1, 2, 3]);
        assert!(reads > 0, "reads went on while the jobs ran");
        assert!(pipeline.oldest().await.is_none());
    }

    #[tokio::test]
    async fn with_no_job_in_flight_it_reads() {
        let mut pipeline = Ordered::<u8>::new();
        match pipeline.next(false, std::future::ready(7)).await {
            Step::Read(r) => assert_eq!(r, 7),
            Step::Decoded(_) => unreachable!(),
        }
    }

    #[tokio::test]
    async fn a_job_that_panics_is_an_error_in_its_place() {
        let mut pipeline = Ordered::new();
        pipeline.spawn(|| -> u8 { panic!("bad batch") });
        pipeline.spawn(|| 2u8);
        assert!(pipeline.oldest().await.unwrap().is_err());
        assert_eq!(pipeline.oldest().await.unwrap().unwrap(), 2);
    }
}
