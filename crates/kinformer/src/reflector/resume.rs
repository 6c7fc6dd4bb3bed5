//! Resuming from a snapshot's resourceVersion: check it, then watch from it instead of
//! listing (see [`crate::snapshot`]).

use tokio_util::sync::CancellationToken;

use super::hooks::{ResumeEvent, ResumeState};
use super::lister_watcher::ListerWatcherExt;
use super::options::{ListOptions, ResourceVersionMatch};
use super::reflector_error::ReflectorError;
use super::run::Reflector;
use crate::object::Object;
use crate::store::ReflectorStore;

impl<K: Object, S: ReflectorStore<K>> Reflector<K, S> {
    fn tell(&self, event: ResumeEvent) {
        if let Some(hook) = &self.on_resume {
            hook(event);
        }
    }

    /// Runs the first cycle as a resume if one is planned: `Ok(true)` when it did (the watch
    /// ended), `Ok(false)` when the caller must list (nothing planned, or the version was
    /// refused: then a consistent list).
    pub(crate) async fn resume_if_planned(
        &self,
        cancel: &CancellationToken,
    ) -> Result<bool, ReflectorError> {
        let planned = std::mem::take(&mut *self.resume.lock());
        let (resource_version, verify) = match planned {
            ResumeState::Planned {
                resource_version,
                verify,
            } => (resource_version, verify),
            other => {
                *self.resume.lock() = other;
                return Ok(false);
            }
        };
        if verify {
            let options = ListOptions {
                resource_version: resource_version.clone(),
                resource_version_match: Some(ResourceVersionMatch::NotOlderThan),
                limit: Some(1),
                ..Default::default()
            };
            let checked = tokio::select! {
                _ = cancel.cancelled() => {
                    *self.resume.lock() = ResumeState::Planned { resource_version, verify };
                    return Ok(true);
                }
                r = self.lister_watcher.list_page(&options) => r,
            };
            match checked {
                Ok(_) => {}
                Err(e) if e.is_too_large_resource_version() => {
                    tracing::warn!(reflector = %self.name, %resource_version, error = %e,
                        "snapshot resourceVersion is ahead of the server; refusing it and listing");
                    self.set_resource_version_unavailable(true);
                    self.tell(ResumeEvent::TooLarge(e.to_string()));
                    return Ok(false);
                }
                Err(e) if e.is_expired() => {
                    tracing::info!(reflector = %self.name, %resource_version, error = %e,
                        "snapshot resourceVersion is too old; listing and diffing");
                    self.set_resource_version_unavailable(true);
                    self.tell(ResumeEvent::Expired(e.to_string()));
                    return Ok(false);
                }
                Err(e) => {
                    // try again next cycle
                    *self.resume.lock() = ResumeState::Planned {
                        resource_version,
                        verify,
                    };
                    return Err(ReflectorError::List(e));
                }
            }
        }
        tracing::info!(reflector = %self.name, %resource_version, "resuming the watch from a snapshot");
        self.set_last_sync_resource_version(&resource_version);
        *self.resume.lock() = ResumeState::Watching { established: false };
        let result = self.watch_with_resync(None, cancel).await;
        let unconfirmed = matches!(*self.resume.lock(), ResumeState::Watching { .. });
        if unconfirmed {
            // ended before its first event: the version is suspect, list consistently
            *self.resume.lock() = ResumeState::Off;
            if let Err(e) = &result {
                let lwe = e.list_watch_error();
                let message = e.to_string();
                self.set_resource_version_unavailable(true);
                if lwe.is_some_and(|e| e.is_too_large_resource_version()) {
                    self.tell(ResumeEvent::TooLarge(message));
                } else if lwe.is_some_and(|e| e.is_expired()) {
                    self.tell(ResumeEvent::Expired(message));
                } else {
                    self.tell(ResumeEvent::Failed(message));
                }
            } else if !cancel.is_cancelled() {
                self.set_resource_version_unavailable(true);
                self.tell(ResumeEvent::Failed("the watch ended".into()));
            }
        }
        result.map(|()| true)
    }

    /// A watch was opened: the first one of a resume is established.
    pub(crate) fn resume_watch_opened(&self) {
        let mut state = self.resume.lock();
        if let ResumeState::Watching { established } = &mut *state
            && !*established
        {
            *established = true;
            drop(state);
            self.tell(ResumeEvent::Established);
        }
    }

    /// The watch delivered an event or bookmark: a resume is confirmed.
    pub(crate) fn resume_event_seen(&self) {
        let mut state = self.resume.lock();
        if matches!(*state, ResumeState::Watching { .. }) {
            *state = ResumeState::Off;
            drop(state);
            self.tell(ResumeEvent::Confirmed);
        }
    }
}
