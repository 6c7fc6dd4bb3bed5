//! Writes in two steps, for the admission webhooks: a verb run against a [`Gate`] decides its
//! write as a dry run does and keeps what it would store ([`Planned`]); the webhooks are asked
//! while nothing is locked; [`Api::commit`] then stores exactly that, provided the object has
//! not changed since (else the caller plans again, as kube-apiserver's `GuaranteedUpdate`
//! retries its admission on a conflict).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::Api;
use crate::resource::ResourceInfo;
use crate::status::ApiError;
use crate::store::{Mutation, StoredObject};

/// How a verb meets its write.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Stage<'a> {
    /// Store it (the usual write).
    Store,
    /// Decide and answer, store nothing (`dryRun=All`).
    DryRun,
    /// Decide and answer as a dry run, and keep the decision in the gate to be committed.
    Plan(&'a Gate),
}

impl From<bool> for Stage<'_> {
    /// `true`: a dry run; `false`: a write that stores.
    fn from(dry_run: bool) -> Self {
        if dry_run { Stage::DryRun } else { Stage::Store }
    }
}

impl<'a> Stage<'a> {
    /// Whether the request is a dry run (what admission is told, and what placeholders a
    /// dry run's allocations give).
    pub(crate) fn dry_run(&self) -> bool {
        match self {
            Stage::Store => false,
            Stage::DryRun => true,
            Stage::Plan(g) => g.dry_run,
        }
    }

    /// The gate a planned write is kept in.
    pub(crate) fn gate(&self) -> Option<&'a Gate> {
        match self {
            Stage::Plan(g) => Some(g),
            _ => None,
        }
    }

    /// Whether nothing is stored now.
    pub(crate) fn previews(&self) -> bool {
        !matches!(self, Stage::Store)
    }
}

/// Where a planned write is kept until the webhooks have answered.
#[derive(Debug)]
pub(crate) struct Gate {
    dry_run: bool,
    planned: Mutex<Option<Planned>>,
    /// For a write through a version a conversion webhook shows: the live object as that
    /// version shows it (`None`: there was none), read before planning.
    pinned: Option<Option<Arc<StoredObject>>>,
    /// Set when the live object was no longer the pinned one.
    stale: AtomicBool,
    /// Whether the admission policies are left to [`Api::admit_planned`], after the mutating
    /// policies and webhooks (which run between the plan and the commit).
    admits_later: bool,
}

impl Gate {
    /// A gate for a request that is (`dry_run`) or is not a dry run.
    pub(crate) fn new(dry_run: bool) -> Self {
        Gate {
            dry_run,
            planned: Mutex::new(None),
            pinned: None,
            stale: AtomicBool::new(false),
            admits_later: false,
        }
    }

    /// This gate, its write planned without the validating admission policies (`later`
    /// true): the mutating admission runs first, and the caller admits what it leaves
    /// ([`Api::admit_planned`]).
    pub(crate) fn admitting_later(mut self, later: bool) -> Self {
        self.admits_later = later;
        self
    }

    /// Whether the validating admission policies are left to the caller.
    pub(super) fn admits_later(&self) -> bool {
        self.admits_later
    }

    /// This gate, its write to be decided over `live` (the live object as the version
    /// written through shows it, converted by the CRD's webhook; `None`: absent) in place of
    /// the stored one, provided the stored one has not changed since (same resourceVersion).
    pub(crate) fn pinned(mut self, live: Option<Arc<StoredObject>>) -> Self {
        self.pinned = Some(live);
        self
    }

    /// The live object the decision is made over: the pinned one when the stored object
    /// (`current`) is still the one it was converted from; an error (and the gate marked
    /// [`stale`](Self::stale)) when it has changed since; `current` when nothing is pinned.
    pub(super) fn live<'a>(
        &'a self,
        current: Option<&'a Arc<StoredObject>>,
    ) -> Result<Option<&'a Arc<StoredObject>>, ApiError> {
        let Some(pinned) = &self.pinned else {
            return Ok(current);
        };
        let rv = |o: Option<&Arc<StoredObject>>| o.map(|o| o.resource_version);
        if rv(current) != rv(pinned.as_ref()) {
            self.stale.store(true, Ordering::Relaxed);
            return Err(ApiError::internal(
                "the object changed while it was converted",
            ));
        }
        Ok(pinned.as_ref())
    }

    /// Whether a live object was pinned ([`pinned`](Self::pinned)).
    pub(crate) fn is_pinned(&self) -> bool {
        self.pinned.is_some()
    }

    /// Whether planning found the live object changed since it was pinned (plan again).
    pub(crate) fn stale(&self) -> bool {
        self.stale.load(Ordering::Relaxed)
    }

    /// The pinned live object, if one was pinned and there was one.
    pub(crate) fn pinned_live(&self) -> Option<&Arc<StoredObject>> {
        self.pinned.as_ref().and_then(Option::as_ref)
    }

    /// Keeps a decision.
    pub(super) fn keep(&self, planned: Planned) {
        *self.planned.lock() = Some(planned);
    }

    /// The decision kept (taken out).
    pub(crate) fn take(&self) -> Result<Planned, ApiError> {
        self.planned
            .lock()
            .take()
            .ok_or_else(|| ApiError::internal("the write was not planned"))
    }
}

/// A write decided but not stored.
#[derive(Debug)]
pub(crate) struct Planned {
    /// The storage resource and key.
    pub(super) gr: String,
    pub(super) key: String,
    /// The live object the decision was made over (`None`: absent).
    pub current: Option<Arc<StoredObject>>,
    /// The revision the decision stamped its objects with.
    pub(super) next: u64,
    /// What it stores.
    pub(super) mutation: Mutation<Arc<StoredObject>>,
    /// What a dry run of it answers ([`crate::store::Preview::answer`]).
    pub answer: Arc<StoredObject>,
}

impl Planned {
    /// The object's name (the last part of its key).
    pub(crate) fn name(&self) -> &str {
        self.key.rsplit('/').next().unwrap_or_default()
    }

    /// Whether the write removes the object.
    pub(crate) fn removes(&self) -> bool {
        matches!(self.mutation, Mutation::Delete(..))
    }

    /// The object the write stores, if it stores one.
    pub(crate) fn stored(&self) -> Option<&Arc<StoredObject>> {
        match &self.mutation {
            Mutation::Put(o, _) => Some(o),
            _ => None,
        }
    }

    /// Stores `o` in place of [`stored`](Self::stored)'s object (and answers with it): the same
    /// write, in another form (converted to the storage version).
    pub(crate) fn store_instead(&mut self, o: Arc<StoredObject>) {
        if let Mutation::Put(stored, out) = &mut self.mutation {
            *stored = o.clone();
            *out = o;
        }
    }
}

impl Api {
    /// Stores what `planned` decided, stamped with the revision it now takes, if the live
    /// object is still the one it was decided over; `None` (nothing stored) otherwise. Then
    /// what follows a write of `res` ([`Api::after_write`]).
    pub(crate) fn commit(
        &self,
        res: &ResourceInfo,
        name: &str,
        planned: Planned,
    ) -> Result<Option<Arc<StoredObject>>, ApiError> {
        let Planned {
            gr,
            key,
            current,
            next,
            mutation,
            ..
        } = planned;
        let seen = current.as_ref().map(|c| c.resource_version);
        let stamp = |o: Arc<StoredObject>, rev: u64| {
            if o.resource_version == next && rev != next {
                Arc::new(o.at_revision(rev))
            } else {
                o
            }
        };
        let committed = self.store.mutate(&gr, &key, |live, rev| {
            if live.map(|c| c.resource_version) != seen {
                return Ok(Mutation::Nothing(None));
            }
            Ok(match mutation {
                Mutation::Nothing(o) => Mutation::Nothing(Some(o)),
                Mutation::Put(o, out) => {
                    let same = Arc::ptr_eq(&out, &o);
                    let o = stamp(o, rev);
                    let out = if same { o.clone() } else { stamp(out, rev) };
                    Mutation::Put(o, Some(out))
                }
                Mutation::Delete(o, out) => Mutation::Delete(stamp(o, rev), Some(stamp(out, rev))),
            })
        })?;
        if committed.is_some() {
            self.after_write(res, name);
        }
        Ok(committed)
    }
}

impl Gate {
    /// Keeps the decision a preview made (`p.out`, over `p.current`) for `key` of `gr`, and
    /// answers as a dry run of it does.
    pub(super) fn plan(
        &self,
        gr: String,
        key: &str,
        p: crate::store::Preview<Mutation<Arc<StoredObject>>>,
    ) -> Arc<StoredObject> {
        let out = match &p.out {
            Mutation::Put(_, o) | Mutation::Delete(_, o) | Mutation::Nothing(o) => o.clone(),
        };
        let answer = crate::store::Preview {
            out,
            current: p.current.clone(),
            next: p.next,
        }
        .answer();
        self.keep(Planned {
            gr,
            key: key.to_string(),
            current: p.current,
            next: p.next,
            mutation: p.out,
            answer: answer.clone(),
        });
        answer
    }
}
