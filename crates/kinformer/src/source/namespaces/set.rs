//! [`NamespaceSet`]: a set of namespace names shared by informers, changeable at run time.

use std::collections::BTreeSet;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a name cannot be a namespace.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{name:?} is not a namespace name: {reason}")]
pub struct NamespaceError {
    /// The name given.
    pub name: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// Checks a namespace name: a DNS-1123 label (apimachinery's `ValidateNamespaceName`): 1 to 63
/// lowercase letters, digits and `-`, starting and ending with a letter or digit.
fn validate(name: &str) -> Result<(), NamespaceError> {
    let err = |reason| {
        Err(NamespaceError {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return err("empty (an empty namespace means every namespace in a request)");
    }
    if name.len() > 63 {
        return err("longer than 63 characters");
    }
    let ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let bytes = name.as_bytes();
    if !bytes.iter().all(|&b| ok(b) || b == b'-') {
        return err("only lowercase letters, digits and '-' are allowed");
    }
    if !ok(bytes[0]) || !ok(bytes[bytes.len() - 1]) {
        return err("must start and end with a letter or digit");
    }
    Ok(())
}

/// The names at one moment.
pub(crate) type Names = Arc<BTreeSet<String>>;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A set of namespaces that can change while informers run over it: a cloneable handle, shared
/// by every informer given it ([`InformerConfig::namespaces`](crate::InformerConfig::namespaces)),
/// which lists and watches exactly the namespaces in the set and follows its changes (see
/// [`NamespaceSetListerWatcher`](super::NamespaceSetListerWatcher) for how).
///
/// Clones are the same set: a change made through one is seen through all. Two handles are
/// equal (and hash, order, and name an informer's [`InformerScope`](crate::factory::InformerScope))
/// by identity, the set made by one [`new`](Self::new), not by the names they hold.
///
/// ```
/// use kinformer::NamespaceSet;
/// let set = NamespaceSet::new(["team-a", "team-b"])?;
/// let shared = set.clone();
/// assert!(shared.insert("team-c")?);
/// assert!(set.contains("team-c"));
/// assert!(set.remove("team-a"));
/// assert_eq!(set.snapshot().into_iter().collect::<Vec<_>>(), ["team-b", "team-c"]);
/// assert!(NamespaceSet::new(["Not_A_Namespace"]).is_err());
/// # Ok::<(), kinformer::NamespaceError>(())
/// ```
#[derive(Clone)]
pub struct NamespaceSet {
    inner: Arc<Inner>,
}

struct Inner {
    id: u64,
    names: tokio::sync::watch::Sender<Names>,
}

impl NamespaceSet {
    /// A set of these namespaces (duplicates count once; none: an empty set, whose informers
    /// hold nothing until a namespace is inserted).
    ///
    /// # Errors
    /// [`NamespaceError`] for the first name that is not a valid namespace name.
    pub fn new<I, S>(names: I) -> Result<Self, NamespaceError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let names = names
            .into_iter()
            .map(|n| {
                let n = n.into();
                validate(&n).map(|()| n)
            })
            .collect::<Result<BTreeSet<_>, _>>()?;
        Ok(Self {
            inner: Arc::new(Inner {
                id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
                names: tokio::sync::watch::Sender::new(Arc::new(names)),
            }),
        })
    }

    /// Adds `namespace`; true when it was not in the set. Informers over the set list it and
    /// watch it from then on (see [`NamespaceSetListerWatcher`](super::NamespaceSetListerWatcher)).
    ///
    /// # Errors
    /// [`NamespaceError`] when `namespace` is not a valid namespace name.
    pub fn insert(&self, namespace: impl Into<String>) -> Result<bool, NamespaceError> {
        let namespace = namespace.into();
        validate(&namespace)?;
        Ok(self.inner.names.send_if_modified(|names| {
            if names.contains(&namespace) {
                return false;
            }
            Arc::make_mut(names).insert(namespace);
            true
        }))
    }

    /// Removes `namespace`; true when it was in the set. Informers over the set drop its
    /// objects (told to handlers as deletes).
    pub fn remove(&self, namespace: &str) -> bool {
        self.inner.names.send_if_modified(|names| {
            if !names.contains(namespace) {
                return false;
            }
            Arc::make_mut(names).remove(namespace);
            true
        })
    }

    /// Makes the set exactly `names`, in one change (informers over it relist once); true when
    /// that changed it.
    ///
    /// # Errors
    /// [`NamespaceError`] for the first invalid name; the set is then left as it was.
    pub fn replace<I, S>(&self, names: I) -> Result<bool, NamespaceError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let new = Self::new(names)?.names();
        Ok(self.inner.names.send_if_modified(|names| {
            if **names == *new {
                return false;
            }
            *names = new;
            true
        }))
    }

    /// Whether `namespace` is in the set.
    pub fn contains(&self, namespace: &str) -> bool {
        self.inner.names.borrow().contains(namespace)
    }

    /// The namespaces in the set now, sorted.
    pub fn snapshot(&self) -> BTreeSet<String> {
        (**self.inner.names.borrow()).clone()
    }

    /// How many namespaces the set holds.
    pub fn len(&self) -> usize {
        self.inner.names.borrow().len()
    }

    /// Whether the set holds no namespace.
    pub fn is_empty(&self) -> bool {
        self.inner.names.borrow().is_empty()
    }

    /// This set's identity: the same for every clone, different for every
    /// [`new`](Self::new).
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// The names now, shared.
    pub(crate) fn names(&self) -> Names {
        self.inner.names.borrow().clone()
    }

    /// A receiver that sees every change.
    pub(crate) fn subscribe(&self) -> tokio::sync::watch::Receiver<Names> {
        self.inner.names.subscribe()
    }
}

impl fmt::Debug for NamespaceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceSet")
            .field("id", &self.inner.id)
            .field("names", &*self.inner.names.borrow())
            .finish()
    }
}

impl PartialEq for NamespaceSet {
    fn eq(&self, other: &Self) -> bool {
        self.inner.id == other.inner.id
    }
}

impl Eq for NamespaceSet {}

impl Hash for NamespaceSet {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.inner.id.hash(state);
    }
}

impl PartialOrd for NamespaceSet {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for NamespaceSet {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.inner.id.cmp(&other.inner.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked_like_the_api_server_does() {
        for bad in ["", "A", "a_b", "-a", "a-", &"a".repeat(64), "a.b"] {
            assert!(NamespaceSet::new([bad]).is_err(), "{bad:?} accepted");
        }
        let set = NamespaceSet::new(["a", "a-1", &"b".repeat(63)]).unwrap();
        assert_eq!(set.len(), 3);
        assert!(set.insert("").is_err());
        assert!(set.replace(["ok", "Bad"]).is_err());
        assert_eq!(set.len(), 3, "a failed replace leaves the set as it was");
    }

    #[test]
    fn changes_are_seen_by_every_clone_and_subscriber_once() {
        let set = NamespaceSet::new(["a"]).unwrap();
        let mut rx = set.subscribe();
        rx.borrow_and_update();
        assert!(!set.insert("a").unwrap(), "already there");
        assert!(!rx.has_changed().unwrap(), "no change, no signal");
        assert!(set.clone().insert("b").unwrap());
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().len(), 2);
        assert!(!set.remove("c"));
        assert!(!rx.has_changed().unwrap());
        assert!(set.replace(["c"]).unwrap());
        assert!(!set.replace(["c"]).unwrap());
        assert_eq!(set.snapshot(), BTreeSet::from(["c".to_owned()]));
    }

    #[test]
    fn handles_are_equal_by_identity() {
        let a = NamespaceSet::new(["x"]).unwrap();
        let b = NamespaceSet::new(["x"]).unwrap();
        assert_eq!(a, a.clone());
        assert_ne!(a, b, "same names, different sets");
        assert_ne!(a.id(), b.id());
    }
}
