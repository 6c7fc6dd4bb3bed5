//! The informer's run loop: the Reflector fills the queue, the loop pops it, applies each
//! batch (or each object's deltas) to the cache and notifies the listeners.

use super::*;

/// Objects of a relist taken from the cache at a time to be told to the handlers (a lean cache
/// decodes them).
const NOTIFY_CHUNK: usize = 256;

impl<K: Object> SharedIndexInformer<K> {
    /// Runs the informer until `cancel` is cancelled: the reflector keeps a DeltaFifo filled,
    /// the process loop applies it to the cache and notifies the handlers. When it returns,
    /// every task it started (reflector, listeners) has finished. Calling it a second time
    /// logs a warning and returns at once.
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &self.inner;
        if inner.state.lock().started {
            tracing::warn!(informer = %inner.name, "the informer has already started; run more than once is not allowed");
            return;
        }
        let prepared = self.prepare_start().await;
        let (fifo, reflector, staging) = {
            let mut state = inner.state.lock();
            if state.started || state.stopped {
                tracing::warn!(informer = %inner.name, "the informer has already started or was stopped; run ignored");
                return;
            }
            let config = &inner.config;
            let fifo = Arc::new(InformerQueue::new(
                config.queue_mode,
                &inner.indexer,
                config.cache_transform(),
                MAX_QUEUED_DELTAS,
            ));
            // On a RealFifo every list is staged into the cache's form as it arrives (encoded
            // in a lean cache, unchanged objects shared with the cache in a full one), so a
            // relist never holds the new list whole; a DeltaFifo hands lists through part by
            // part anyway. A lean cache also has its first list written and told part by part.
            let staging = matches!(&*fifo, InformerQueue::Real(_)).then(|| {
                let initial = (inner.indexer.cache_mode() == CacheMode::Lean).then(|| {
                    let this = self.clone();
                    let initial: InitialPart<K> =
                        Box::new(move |items| this.apply_initial_part(items));
                    initial
                });
                Arc::new(ListStaging::new(
                    fifo.clone(),
                    inner.indexer.clone(),
                    config.cache_transform(),
                    initial,
                ))
            });
            let store: InformerStore<K> = match &staging {
                Some(staging) => staging.clone(),
                None => fifo.clone(),
            };
            let processor = inner.processor.clone();
            // The Reflector resyncs at the check period, which handlers may have lowered.
            let mut list_watch = config.clone();
            list_watch.resync_period = state.resync_check_period;
            let mut builder = Reflector::builder(inner.lister_watcher.clone(), store)
                .name(inner.name.clone())
                .config(&list_watch)
                .should_resync(move || processor.should_resync());
            if let Some(id) = &inner.snap.identity {
                builder = builder.streaming_list_server(&id.group, &id.version);
            }
            match prepared.map(|p| self.install_prepared(p, &fifo)) {
                None => {}
                Some(snapshot::StartPlan::Diff) => builder = builder.consistent_first_list(),
                Some(snapshot::StartPlan::Resume {
                    resource_version,
                    verify,
                }) => {
                    let hook = self.resume_hook(fifo.clone(), resource_version.clone());
                    builder = builder.resume_from(resource_version, verify, hook);
                }
            }
            let reflector = Arc::new(builder.build());
            state.reflector = Some(reflector.clone());
            state.queue = Some(fifo.clone());
            state.started = true;
            (fifo, reflector, staging)
        };
        inner.processor.start();

        let tasks = tokio_util::task::TaskTracker::new();
        let stop = cancel.child_token();
        tasks.spawn({
            let reflector = reflector.clone();
            let stop = stop.clone();
            async move { reflector.run(stop).await }
        });
        // An empty initial list syncs the queue without anything to pop.
        tasks.spawn({
            let this = self.clone();
            let fifo = fifo.clone();
            let stop = stop.clone();
            async move {
                let mut synced = fifo.synced_watch();
                tokio::select! {
                    _ = stop.cancelled() => {}
                    Ok(_) = synced.wait_for(|s| *s) => {
                        let _deltas = this.inner.block_deltas.lock();
                        this.mark_synced_locked();
                    }
                }
            }
        });
        if let Some(interval) = inner.config.consistency_check {
            tasks.spawn({
                let this = self.clone();
                let stop = stop.clone();
                async move {
                    loop {
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            () = tokio::time::sleep(interval) => {}
                        }
                        tokio::select! {
                            _ = stop.cancelled() => break,
                            _ = this.check_consistency() => {}
                        }
                    }
                }
            });
        }
        if let Some(options) = &inner.config.snapshot
            && !options.interval.is_zero()
        {
            tasks.spawn(
                self.clone()
                    .write_periodically(options.interval, stop.clone()),
            );
        }
        tasks.close();

        loop {
            let popped = tokio::select! {
                biased;
                _ = stop.cancelled() => break,
                r = self.pop_within_room(&fifo, staging.as_deref()) => r,
            };
            match popped {
                Ok(Some(later)) => {
                    tokio::select! {
                        biased;
                        _ = stop.cancelled() => break,
                        () = self.notify_later(later) => {}
                    }
                }
                Ok(None) => {}
                Err(QueueError::Closed) => break,
                Err(e) => tracing::error!(informer = %inner.name, error = %e, "pop failed"),
            }
            if fifo.has_synced() && !inner.synced_flag.is_synced() {
                let _deltas = inner.block_deltas.lock();
                self.mark_synced_locked();
            }
        }

        if cancel.is_cancelled()
            && inner
                .config
                .snapshot
                .as_ref()
                .is_some_and(|o| o.write_on_shutdown)
        {
            self.write_logged("shutdown").await;
        }
        inner.state.lock().stopped = true;
        inner.indexer.close_waits();
        stop.cancel();
        fifo.close();
        tasks.wait().await;
        inner.processor.shutdown().await;
        tracing::debug!(informer = %inner.name, "informer stopped");
    }

    /// Marks the informer synced and tells every listener, in its queue order. Caller holds
    /// `block_deltas`.
    pub(super) fn mark_synced_locked(&self) {
        if !self.inner.synced_flag.is_synced() {
            self.settle_at_sync();
            self.inner.synced_flag.mark_synced();
            self.inner.processor.distribute(&Event::Synced, false);
        }
    }

    /// After a list is installed: unless one is scheduled already, schedules the tidy-up of
    /// [`crate::memory`] (a lean cache forgets the decoded objects nobody holds, then, with
    /// [`InformerConfig::release_memory`], freed memory goes back to the OS). Needs a tokio
    /// runtime; without one, nothing happens.
    pub(super) fn tidy_after_list(&self) {
        let pending = &self.inner.tidy_pending;
        if pending.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            pending.store(false, Ordering::Release);
            return;
        };
        let (indexer, pending) = (self.inner.indexer.clone(), pending.clone());
        let release = self.inner.config.release_memory;
        runtime.spawn(async move {
            let release = release.then(crate::memory::release_free_memory_in_background);
            crate::memory::tidy_after_list(|| indexer.prune_decoded(), release).await;
            pending.store(false, Ordering::Release);
        });
    }

    /// After watch events were applied to the cache: with
    /// [`InformerConfig::release_memory`], freed memory goes back to the OS now and then
    /// ([`crate::memory::release_while_events_flow`]).
    fn events_applied(&self, events: usize, is_in_initial_list: bool) {
        if !is_in_initial_list && self.inner.config.release_memory {
            crate::memory::release_while_events_flow(events);
        }
    }

    /// The notification for an object written to the cache over `old` (none: an add).
    pub(super) fn notify_upsert(&self, old: Option<Arc<K>>, obj: Arc<K>, is_in_initial_list: bool) {
        let processor = &self.inner.processor;
        match old {
            Some(old) => {
                let is_sync = resource_version(old.as_ref()) == resource_version(obj.as_ref());
                processor.distribute(&Event::Update { old, new: obj }, is_sync);
            }
            None => processor.distribute(
                &Event::Add {
                    obj,
                    is_in_initial_list,
                },
                false,
            ),
        }
    }

    /// client-go 1.36's `processDeltasInBatch` and its atomic entries: a batch goes to the
    /// cache in one transaction, then its notifications go out in arrival order; a relist is
    /// one swap whose deletions (tombstones) are told before its updates and adds; a resync
    /// re-delivers every cached object.
    pub(super) fn handle_popped(
        &self,
        popped: Popped<K>,
        is_in_initial_list: bool,
        staging: Option<&ListStaging<K, Arc<InformerQueue<K>>>>,
    ) -> Option<Later<K>> {
        let inner = &self.inner;
        let _deltas = inner.block_deltas.lock();
        if !is_in_initial_list {
            self.mark_synced_locked();
        }
        match popped {
            Popped::Deltas(batch) => {
                // One transaction for the batch; only deletions carry tombstones.
                let mut kept = Vec::with_capacity(batch.len());
                let mut txns = Vec::with_capacity(batch.len());
                for d in batch {
                    let txn = match (d.delta_type(), &d.delta.object) {
                        (DeltaType::Deleted, obj) => Transaction::Delete(obj.clone()),
                        (_, ObjectOrTombstone::Object(obj)) => Transaction::Update(obj.clone()),
                        (_, ObjectOrTombstone::Tombstone(_)) => {
                            tracing::error!(informer = %inner.name, "a non-delete delta carried a tombstone; skipped");
                            continue;
                        }
                    };
                    txns.push(txn);
                    kept.push(d);
                }
                let outcome = inner.indexer.transaction(txns);
                let applied = kept.len();
                if let Some(e) = outcome.error() {
                    tracing::error!(informer = %inner.name, error = %e, "some cache writes failed; their notifications are skipped");
                }
                for (d, result) in kept.into_iter().zip(outcome.into_results()) {
                    let Ok(old) = result else { continue };
                    match (d.delta.delta_type, d.delta.object) {
                        (DeltaType::Deleted, obj) => {
                            inner.processor.distribute(&Event::Delete(obj), false)
                        }
                        (_, ObjectOrTombstone::Object(obj)) => {
                            self.notify_upsert(old, obj, is_in_initial_list)
                        }
                        // filtered out above
                        (_, ObjectOrTombstone::Tombstone(_)) => {}
                    }
                }
                self.events_applied(applied, is_in_initial_list);
            }
            Popped::ReplacedAll(all) => {
                self.tidy_after_list();
                // the relist staged while it downloaded; the popped entry is its placeholder
                let staged = match staging.and_then(ListStaging::take_ready) {
                    Some(Ready::Staged(stage)) => Some(stage),
                    Some(Ready::Applied) => {
                        // The first list, written and told part by part as it downloaded.
                        inner.indexer.bookmark(&all.resource_version);
                        // an empty snapshot's first relist has nothing left to diff
                        inner.snap.diff_pending.store(false, Ordering::Release);
                        return None;
                    }
                    None => None,
                };
                return self.apply_relist(staged, &all.resource_version, is_in_initial_list);
            }
            Popped::SyncAll => {
                // Told later, a chunk at a time, to the listeners in this resync round.
                return Some(Later::Resync {
                    keys: inner.indexer.list_keys(),
                    recipients: inner.processor.recipients(true),
                });
            }
            Popped::Bookmark { resource_version } => inner.indexer.bookmark(&resource_version),
        }
        None
    }

    /// A relist (client-go 1.36's atomic `ReplacedAll`): installs it in one swap, then tells
    /// the handlers its deletions (tombstones, sorted by key) before its updates and adds, in
    /// list order. A lean cache's objects are decoded a chunk at a time, never all at once.
    ///
    /// The initial list's adds (which do not count toward the backlog bound) are told at once;
    /// a later relist's notifications are returned, to be told chunk by chunk as the
    /// listeners have room ([`notify_later`](Self::notify_later)).
    pub(super) fn apply_relist(
        &self,
        staged: Option<StagedReplace<K>>,
        resource_version: &str,
        is_in_initial_list: bool,
    ) -> Option<Later<K>> {
        let inner = &self.inner;
        let Some(staged) = staged else {
            tracing::error!(informer = %inner.name, "a relist was popped without its staged objects; skipped");
            return None;
        };
        let outcome = match inner.indexer.install_staged(staged, resource_version) {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!(informer = %inner.name, error = %e, "relist not applied to the cache");
                return None;
            }
        };
        // The first relist after a snapshot or seed: what is gone was known, so its deletion
        // carries the last known object, not a tombstone (see crate::snapshot).
        let diff = inner.snap.diff_pending.swap(false, Ordering::AcqRel);
        if !is_in_initial_list {
            return Some(Later::Relist {
                outcome,
                recipients: inner.processor.recipients(false),
                diff,
            });
        }
        for (key, stored) in outcome.removed() {
            let deleted = self.relist_deletion(&key, &stored, diff);
            inner.processor.distribute(&Event::Delete(deleted), false);
        }
        // A chunk at a time (decoded on every core in a lean cache), told in list order.
        for chunk in outcome.listed.chunks(NOTIFY_CHUNK) {
            for (old, obj) in inner.indexer.staged_objects(chunk, &outcome) {
                self.notify_upsert(old, obj, is_in_initial_list);
            }
        }
        None
    }

    /// One part of the first list of a lean cache, written to the (empty) cache as it
    /// downloads and its adds told at once, with the objects the decoder made (they are never
    /// decoded again). Deliberate difference: client-go's informer holds the whole list before
    /// it fills the cache; here the cache fills part by part before the informer has synced, as
    /// client-go's DeltaFIFO-era informers did object by object.
    fn apply_initial_part(&self, items: Vec<Arc<K>>) {
        let inner = &self.inner;
        let _deltas = inner.block_deltas.lock();
        let txns = items.iter().cloned().map(Transaction::Update).collect();
        let outcome = inner.indexer.transaction(txns);
        if let Some(e) = outcome.error() {
            tracing::error!(informer = %inner.name, error = %e, "some listed objects were not cached; their notifications are skipped");
        }
        for (obj, result) in items.into_iter().zip(outcome.into_results()) {
            if let Ok(old) = result {
                self.notify_upsert(old, obj, true);
            }
        }
    }

    /// When a lean cache's informer is about to report synced (its initial list is in, on
    /// either queue): the hot set is emptied (it holds the list's last objects, which no
    /// reconciler is more likely to read than any other: 6 MB for 128 pods with
    /// managedFields), the decoded objects nobody holds are forgotten and, with
    /// [`InformerConfig::release_memory`], freed memory goes back to the OS, so memory read
    /// when the cache has synced is what the cache keeps (the tidy-up half a second after a
    /// list forgets what handlers still held then). Caller holds `block_deltas`.
    fn settle_at_sync(&self) {
        let inner = &self.inner;
        if inner.indexer.cache_mode() != CacheMode::Lean {
            return;
        }
        inner.indexer.forget_hot_decoded();
        inner.indexer.prune_decoded();
        if inner.config.release_memory {
            crate::memory::release_free_memory();
        }
    }

    /// client-go's `processDeltas`: apply one key's deltas to the cache, then notify.
    pub(super) fn handle_deltas(&self, deltas: Deltas<K>, is_in_initial_list: bool) {
        let inner = &self.inner;
        let _deltas = inner.block_deltas.lock();
        if !is_in_initial_list {
            // The queue had synced before this item was popped.
            self.mark_synced_locked();
        }
        let mut replaced = false;
        for delta in deltas {
            if delta.delta_type == DeltaType::Replaced {
                replaced = true;
                self.tidy_after_list();
            }
            match delta.delta_type {
                DeltaType::Sync | DeltaType::Replaced | DeltaType::Added | DeltaType::Updated => {
                    let ObjectOrTombstone::Object(obj) = delta.object else {
                        tracing::error!(informer = %inner.name, "a non-delete delta carried a tombstone; skipped");
                        continue;
                    };
                    match inner.indexer.upsert(obj.clone()) {
                        Ok(old) => self.notify_upsert(old, obj, is_in_initial_list),
                        Err(e) => {
                            tracing::error!(informer = %inner.name, error = %e, "cache update failed; object skipped")
                        }
                    }
                }
                DeltaType::Deleted => {
                    let removed = match delta.object.key() {
                        Ok(key) => inner.indexer.delete_by_key(&key),
                        Err(e) => Err(e.into()),
                    };
                    match removed {
                        Ok(_) => inner
                            .processor
                            .distribute(&Event::Delete(delta.object), false),
                        Err(e) => {
                            tracing::error!(informer = %inner.name, error = %e, "cache delete failed; skipped")
                        }
                    }
                }
            }
        }
        if !replaced {
            self.events_applied(1, is_in_initial_list);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use futures::{FutureExt, StreamExt};
    use k8s_openapi::api::core::v1::Pod;

    use super::*;
    use crate::ResourceEventHandlerFuncs;
    use crate::informer::QueueMode;
    use crate::reflector::{ListPage, ListWatch};
    use crate::store::CacheMode;

    fn pod(name: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = Some(name.to_owned());
        pod.metadata.namespace = Some("default".to_owned());
        pod.metadata.resource_version = Some("1".to_owned());
        pod
    }

    /// A lean informer forgets the decoded objects of its initial list once the handlers are
    /// done with them: their allocations (2.4 KB per pod) do not outlive the list. In both
    /// queue modes.
    #[tokio::test(start_paused = true)]
    async fn a_lean_informer_forgets_listed_objects_after_the_list() {
        for mode in [QueueMode::RealFifo, QueueMode::DeltaFifo] {
            lean_informer_forgets_listed_objects(mode).await;
        }
    }

    /// A lean informer's first list into an empty cache is cached and told page by page as it
    /// downloads (the decoder's objects go to the handlers, never decoded again): when the
    /// second page is asked for, the first is cached and its adds told. A later relist is
    /// staged and told after its swap, as before.
    #[tokio::test(start_paused = true)]
    async fn a_lean_informers_first_list_is_applied_page_by_page() {
        let slot: Arc<std::sync::OnceLock<(Indexer<Pod>, Arc<AtomicUsize>)>> = Arc::default();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s, sn) = (slot.clone(), seen.clone());
        let lw = ListWatch::<Pod>::new(
            move |opts| {
                if let Some((indexer, adds)) = s.get() {
                    sn.lock()
                        .push((indexer.len(), adds.load(Ordering::Relaxed)));
                }
                async move {
                    Ok(match opts.continue_token.as_deref() {
                        None => ListPage::new(vec![pod("a"), pod("b")], "5").with_continue("more"),
                        Some(_) => ListPage::new(vec![pod("c")], "5"),
                    })
                }
                .boxed()
            },
            |_| async { Ok(futures::stream::pending().boxed()) }.boxed(),
        );
        let config = InformerConfig::default().cache_mode(CacheMode::Lean);
        let informer = SharedIndexInformer::builder(lw).config(config).build();
        let adds = Arc::new(AtomicUsize::new(0));
        let a = adds.clone();
        informer
            .add_event_handler(ResourceEventHandlerFuncs::new().on_add(move |_, _| {
                a.fetch_add(1, Ordering::Relaxed);
            }))
            .unwrap();
        assert!(slot.set((informer.indexer(), adds.clone())).is_ok());
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        while !informer.has_synced() || adds.load(Ordering::Relaxed) < 3 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let seen = seen.lock().clone();
        assert_eq!(seen.len(), 2, "two pages: {seen:?}");
        assert_eq!(seen[0].0, 0, "nothing cached before the list");
        assert_eq!(
            seen[1].0, 2,
            "the first page cached before the second is asked for"
        );
        let indexer = informer.indexer();
        assert_eq!(indexer.len(), 3);
        assert_eq!(indexer.last_resource_version().as_deref(), Some("5"));
        assert_eq!(adds.load(Ordering::Relaxed), 3, "each object told once");
        cancel.cancel();
        run.await.unwrap();
    }

    async fn lean_informer_forgets_listed_objects(mode: QueueMode) {
        const N: usize = 600;
        let lw = ListWatch::<Pod>::new(
            |_| {
                async {
                    let pods = (0..N).map(|i| pod(&format!("p{i}"))).collect();
                    Ok(ListPage::new(pods, "1"))
                }
                .boxed()
            },
            |_| async { Ok(futures::stream::pending().boxed()) }.boxed(),
        );
        let config = InformerConfig::default()
            .cache_mode(CacheMode::Lean)
            .queue_mode(mode);
        let informer = SharedIndexInformer::builder(lw).config(config).build();
        let adds = Arc::new(AtomicUsize::new(0));
        let a = adds.clone();
        informer
            .add_event_handler(ResourceEventHandlerFuncs::new().on_add(move |_, _| {
                a.fetch_add(1, Ordering::Relaxed);
            }))
            .unwrap();
        let cancel = CancellationToken::new();
        let run = tokio::spawn({
            let (i, c) = (informer.clone(), cancel.clone());
            async move { i.run(c).await }
        });
        while adds.load(Ordering::Relaxed) < N {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let indexer = informer.indexer();
        tokio::time::sleep(crate::memory::AFTER_LIST_WAIT * 2).await;
        // On either queue the hot set is emptied before the informer reports synced (it held
        // the list's last objects, written one by one on a DeltaFifo, a part at a time on a
        // RealFifo), and the tidy-up after the list forgot what the handler held: nothing
        // stays decoded.
        assert!(informer.has_synced());
        assert_eq!(indexer.decoded_entries(), 0, "{mode:?}");
        assert_eq!(
            indexer.list_keys().len(),
            N,
            "{mode:?}: nothing cached is lost"
        );
        let held = indexer.get_by_key("default/p7").unwrap();
        assert_eq!(held.metadata.name.as_deref(), Some("p7"));
        cancel.cancel();
        run.await.unwrap();
    }
}
