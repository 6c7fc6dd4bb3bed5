//! A kube-runtime controller, moved onto kinformer's shared informers: the shape of kube-rs's
//! `configmapgen_controller` example (a `ConfigMapGenerator` custom resource, and a ConfigMap
//! it owns, applied server-side), against the embedded API server.
//!
//! `cargo run -p kinformer --example kube_runtime_controller --features kube-runtime`
//!
//! The reconciler, the error policy and the custom resource are what a kube-runtime program
//! already has; only the controller's construction changes, and [`controller`] has both: with
//! kube-runtime's own watchers (one per controller and type),
//!
//! ```text
//! Controller::new(Api::all(client.clone()), watcher::Config::default())
//!     .owns(Api::<ConfigMap>::all(client.clone()), watcher::Config::default())
//! ```
//!
//! and fed by a `SharedInformerFactory` through [`kinformer::kube_runtime::Bridge`]s, whose
//! two informers serve every other controller and kinformer handler of the program too (one
//! list and one watch per type, whatever the number of controllers):
//!
//! ```text
//! let factory = SharedInformerFactory::new(client.clone());
//! let generators = Bridge::new(&factory.informer())?;
//! let configmaps = Bridge::new(&factory.informer())?;
//! Controller::for_shared_stream(generators.applied_objects(), generators.store())
//!     .owns_shared_stream::<ConfigMap>(configmaps.touched_objects())
//! // ... factory.start() once every informer is asked for
//! ```
//!
//! The tests run it both ways (`tests/embedded_cluster/kube_runtime_bridge.rs`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kinformer::kube_runtime::Bridge;
use kinformer::{ResourceEventHandlerFuncs, SharedInformerFactory};
use kinformer_apiserver::RunningServer;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{CustomResource, CustomResourceExt, Resource};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

/// What a reconcile can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Writing the ConfigMap failed.
    #[error("failed to apply the ConfigMap: {0}")]
    ConfigMapApply(#[source] kube::Error),
    /// The generator lacks a field every stored object has.
    #[error("the generator has no {0}")]
    MissingObjectKey(&'static str),
}

/// A generator of one ConfigMap holding `content`.
#[derive(CustomResource, Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[kube(group = "nullable.se", version = "v1", kind = "ConfigMapGenerator")]
#[kube(shortname = "cmg", namespaced)]
pub struct ConfigMapGeneratorSpec {
    /// The ConfigMap's `content` entry.
    pub content: String,
}

/// What reconciles share.
pub struct Data {
    client: kube::Client,
    reconciles: AtomicUsize,
}

/// Applies the ConfigMap a generator describes, owned by the generator.
pub async fn reconcile(
    generator: Arc<ConfigMapGenerator>,
    ctx: Arc<Data>,
) -> Result<Action, Error> {
    ctx.reconciles.fetch_add(1, Ordering::Relaxed);
    let namespace = generator
        .metadata
        .namespace
        .as_deref()
        .ok_or(Error::MissingObjectKey(".metadata.namespace"))?;
    let name = generator
        .metadata
        .name
        .clone()
        .ok_or(Error::MissingObjectKey(".metadata.name"))?;
    let owner = generator
        .controller_owner_ref(&())
        .ok_or(Error::MissingObjectKey(".metadata.uid"))?;
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(
            "content".to_owned(),
            generator.spec.content.clone(),
        )])),
        ..Default::default()
    };
    Api::<ConfigMap>::namespaced(ctx.client.clone(), namespace)
        .patch(
            &name,
            &PatchParams::apply("configmapgenerator.kinformer.example"),
            &Patch::Apply(&cm),
        )
        .await
        .map_err(Error::ConfigMapApply)?;
    Ok(Action::requeue(Duration::from_secs(300)))
}

/// Retries a failed reconcile after a second.
pub fn error_policy(
    _generator: Arc<ConfigMapGenerator>,
    _error: &Error,
    _ctx: Arc<Data>,
) -> Action {
    Action::requeue(Duration::from_secs(1))
}

/// A generator of `content` in `namespace`.
pub fn generator(namespace: &str, name: &str, content: &str) -> ConfigMapGenerator {
    let mut g = ConfigMapGenerator::new(
        name,
        ConfigMapGeneratorSpec {
            content: content.to_owned(),
        },
    );
    g.metadata.namespace = Some(namespace.to_owned());
    g
}

/// What a run saw.
#[derive(Debug)]
pub struct Report {
    /// Reconciles made by the controller.
    pub reconciles: usize,
    /// Generators a kinformer handler on the same informer heard of (shared informers).
    pub handler_adds: usize,
}

/// How the controller gets its objects: the program before and after the move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wiring {
    /// kube-runtime's own watchers, one per controller and type.
    KubeRuntime,
    /// kinformer's shared informers, through [`Bridge`]s.
    SharedInformers,
}

/// The controller, wired one way or the other, and the factory to start (shared informers).
/// The whole move from kube-runtime is the difference between the two arms.
fn controller(
    wiring: Wiring,
    client: &kube::Client,
) -> Result<
    (
        Controller<ConfigMapGenerator>,
        Option<SharedInformerFactory>,
    ),
    String,
> {
    Ok(match wiring {
        Wiring::KubeRuntime => (
            Controller::new(Api::all(client.clone()), watcher::Config::default()).owns(
                Api::<ConfigMap>::all(client.clone()),
                watcher::Config::default(),
            ),
            None,
        ),
        Wiring::SharedInformers => {
            let factory = SharedInformerFactory::new(client.clone());
            let generators = Bridge::new(&factory.informer()).map_err(|e| e.to_string())?;
            let configmaps = Bridge::new(&factory.informer()).map_err(|e| e.to_string())?;
            (
                Controller::for_shared_stream(generators.applied_objects(), generators.store())
                    .owns_shared_stream::<ConfigMap>(configmaps.touched_objects()),
                Some(factory),
            )
        }
    })
}

/// Installs the CRD, creates `generators` generators, runs the controller (wired as `wiring`
/// says) until every generator's ConfigMap holds its content, then changes one generator and
/// deletes another's ConfigMap (which the controller restores, as it owns it) and waits again.
pub async fn run(
    server: &RunningServer,
    generators: usize,
    wiring: Wiring,
) -> Result<Report, String> {
    let client = server.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.create(&PostParams::default(), &ConfigMapGenerator::crd())
        .await
        .map_err(|e| format!("creating the CRD: {e}"))?;
    let gens: Api<ConfigMapGenerator> = Api::namespaced(client.clone(), "default");
    for i in 0..generators {
        let g = generator("default", &format!("gen-{i}"), &format!("v{i}"));
        gens.create(&PostParams::default(), &g)
            .await
            .map_err(|e| format!("creating gen-{i}: {e}"))?;
    }

    let (controller, factory) = controller(wiring, &client)?;
    // On shared informers, a kinformer handler shares the generators' informer too.
    let handler_adds = Arc::new(AtomicUsize::new(0));
    if let Some(factory) = &factory {
        let adds = handler_adds.clone();
        factory
            .informer::<ConfigMapGenerator>()
            .add_event_handler(ResourceEventHandlerFuncs::new().on_add(move |_, _| {
                adds.fetch_add(1, Ordering::Relaxed);
            }))
            .map_err(|e| e.to_string())?;
        factory.start();
    }

    // The kube-runtime controller, unchanged but for its construction.
    let data = Arc::new(Data {
        client: client.clone(),
        reconciles: AtomicUsize::new(0),
    });
    let stop = CancellationToken::new();
    let controller = tokio::spawn({
        let (data, stop) = (data.clone(), stop.clone());
        async move {
            controller
                .graceful_shutdown_on(async move { stop.cancelled().await })
                .run(reconcile, error_policy, data)
                .for_each(|result| async move {
                    if let Err(e) = result {
                        eprintln!("reconcile failed: {e}");
                    }
                })
                .await
        }
    });

    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let expect = |n: usize| {
        (0..n)
            .map(|i| (format!("gen-{i}"), format!("v{i}")))
            .collect::<BTreeMap<_, _>>()
    };
    let mut want = expect(generators);
    converge(&cms, &want).await?;

    // A changed generator and a deleted ConfigMap: both reconcile the generator again.
    if generators >= 2 {
        gens.patch(
            "gen-0",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"content": "changed"}})),
        )
        .await
        .map_err(|e| format!("changing gen-0: {e}"))?;
        want.insert("gen-0".to_owned(), "changed".to_owned());
        cms.delete("gen-1", &Default::default())
            .await
            .map_err(|e| format!("deleting gen-1's ConfigMap: {e}"))?;
        converge(&cms, &want).await?;
    }

    stop.cancel();
    controller.await.map_err(|e| e.to_string())?;
    if let Some(factory) = factory {
        factory.shutdown().await;
    }
    Ok(Report {
        reconciles: data.reconciles.load(Ordering::Relaxed),
        handler_adds: handler_adds.load(Ordering::Relaxed),
    })
}

/// Waits (up to a minute) until the ConfigMaps' contents are `want`.
async fn converge(cms: &Api<ConfigMap>, want: &BTreeMap<String, String>) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let list = cms
            .list(&Default::default())
            .await
            .map_err(|e| e.to_string())?;
        let got: BTreeMap<String, String> = list
            .items
            .iter()
            .filter_map(|cm| {
                let name = cm.metadata.name.clone()?;
                let content = cm.data.as_ref()?.get("content")?.clone();
                Some((name, content))
            })
            .collect();
        if &got == want {
            return Ok(());
        }
        if tokio::time::Instant::now() > deadline {
            return Err(format!(
                "not converged after 60 s: want {want:?}, got {got:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let server = kinformer_apiserver::start(Default::default()).await?;
    let report = run(&server, 20, Wiring::SharedInformers).await?;
    println!(
        "converged: 20 generators, {} reconciles; a kinformer handler on the same informer saw {} generators",
        report.reconciles, report.handler_adds
    );
    server.shutdown().await;
    Ok(())
}
