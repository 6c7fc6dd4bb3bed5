//! The schema table's types: messages, their fields, and the kinds that name them.

/// What a field holds, and so how it is written in protobuf and in JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A string (JSON string).
    Str,
    /// A byte string (JSON: base64).
    Bytes,
    /// A bool (varint).
    Bool,
    /// An int32 (varint, sign-extended).
    I32,
    /// An int64 (varint).
    I64,
    /// A uint32 (varint).
    U32,
    /// A uint64 (varint). No built-in kind has one today; the generator emits it if one does.
    #[allow(dead_code)]
    U64,
    /// A float64 (fixed64).
    F64,
    /// A nested message, by index into the table.
    Msg(u16),
    /// `metav1.Time`: `{seconds, nanos}`; JSON RFC 3339 with seconds, `null` when zero.
    Time,
    /// `metav1.MicroTime`: `{seconds, nanos}`; JSON RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration`: `{duration (ns)}`; JSON Go duration text (`1h2m3s`). No served kind
    /// has one today; the generator emits it if one does.
    #[allow(dead_code)]
    Duration,
    /// `resource.Quantity`: `{string}`; JSON string.
    Quantity,
    /// `intstr.IntOrString`: `{type, intVal, strVal}`; JSON number or string.
    IntOrString,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions `JSON`: `{raw}` holding JSON.
    RawJson,
    /// apiextensions `JSONSchemaPropsOrArray`: `{schema, jSONSchemas}`.
    SchemaOrArray(u16),
    /// apiextensions `JSONSchemaPropsOrBool`: `{allows, schema}`.
    SchemaOrBool(u16),
    /// apiextensions `JSONSchemaPropsOrStringArray`: `{schema, property}`.
    SchemaOrStringArray(u16),
    /// A map with string keys: repeated entries `{1: key, 2: value}`; JSON object.
    Map(&'static Kind),
    /// A named Go slice held as one value: `{repeated items = 1}`; JSON array.
    Wrapper(&'static Kind),
}

/// One field of a message.
#[derive(Debug)]
pub(crate) struct Field {
    /// The protobuf field number.
    pub(crate) num: u32,
    /// The JSON name (empty for an inline field).
    pub(crate) json: &'static str,
    /// What it holds.
    pub(crate) kind: Kind,
    /// `REPEATED | POINTER | OMITEMPTY | INLINE`.
    pub(crate) flags: u8,
}

impl Field {
    /// A Go slice (not `[]byte`) written as a repeated field.
    pub(crate) const REPEATED: u8 = 1;
    /// Nil-able in Go (pointer, slice, map): absent means nil, not the zero value.
    pub(crate) const POINTER: u8 = 2;
    /// `json:",omitempty"`.
    pub(crate) const OMITEMPTY: u8 = 4;
    /// An embedded struct whose fields JSON writes in the parent (`json:",inline"`).
    pub(crate) const INLINE: u8 = 8;

    pub(crate) const fn new(num: u32, json: &'static str, kind: Kind, flags: u8) -> Field {
        Field {
            num,
            json,
            kind,
            flags,
        }
    }

    pub(crate) fn repeated(&self) -> bool {
        self.flags & Self::REPEATED != 0
    }

    pub(crate) fn pointer(&self) -> bool {
        self.flags & Self::POINTER != 0
    }

    pub(crate) fn omitempty(&self) -> bool {
        self.flags & Self::OMITEMPTY != 0
    }

    pub(crate) fn inline(&self) -> bool {
        self.flags & Self::INLINE != 0
    }
}

/// One message: its Go type's short name and its fields in Go struct order.
#[derive(Debug)]
pub(crate) struct Message {
    /// `core/v1.Pod`.
    pub(crate) name: &'static str,
    /// Fields in the order encoding/json writes them.
    pub(crate) fields: &'static [Field],
}

/// A registered kind and its message.
#[derive(Debug)]
pub(crate) struct KindEntry {
    pub(crate) group: &'static str,
    pub(crate) version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) msg: u16,
}

impl KindEntry {
    pub(crate) const fn new(
        group: &'static str,
        version: &'static str,
        kind: &'static str,
        msg: u16,
    ) -> KindEntry {
        KindEntry {
            group,
            version,
            kind,
            msg,
        }
    }
}

/// One Kubernetes version's schema table, as `gen/` writes it.
pub(crate) struct Table {
    /// The Kubernetes minor it was read from (`1.35`).
    pub(crate) version: &'static str,
    /// Every message, by index (`Kind::Msg` and its kin index this).
    pub(crate) messages: &'static [Message],
    /// Every registered kind, sorted by (group, version, kind).
    pub(crate) kinds: &'static [KindEntry],
}

impl Table {
    /// Message `index` of this table (an index the table itself holds).
    pub(crate) fn message(&'static self, index: u16) -> MessageRef {
        MessageRef {
            table: self,
            msg: &self.messages[usize::from(index)],
        }
    }

    /// The message of `kind` in `api_version`, if this table has it.
    pub(crate) fn for_kind(&'static self, api_version: &str, kind: &str) -> Option<MessageRef> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        self.kinds
            .binary_search_by(|k| (k.group, k.version, k.kind).cmp(&(group, version, kind)))
            .ok()
            .map(|i| self.message(self.kinds[i].msg))
    }
}

/// A message of a table: what the encoders and decoders take. It names the message and the
/// table it belongs to (the messages it refers to are in the same table).
#[derive(Clone, Copy)]
pub struct MessageRef {
    table: &'static Table,
    msg: &'static Message,
}

// Callers keep it in their decoders and hand it to other threads: it stays small, `Copy`,
// `Send` and `Sync` (two pointers to statics).
const _: () = {
    const fn holds<T: Copy + Send + Sync + 'static>() {}
    holds::<MessageRef>();
    assert!(std::mem::size_of::<MessageRef>() <= 16);
};

impl PartialEq for MessageRef {
    fn eq(&self, other: &MessageRef) -> bool {
        std::ptr::eq(self.msg, other.msg)
    }
}

impl Eq for MessageRef {}

impl std::fmt::Debug for MessageRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MessageRef")
            .field("name", &self.msg.name)
            .field("kubernetes", &self.table.version)
            .finish()
    }
}

impl MessageRef {
    pub(crate) fn get(self) -> &'static Message {
        self.msg
    }

    /// Message `index` of the same table (what a `Kind::Msg` of this message's fields holds).
    pub(crate) fn sibling(self, index: u16) -> MessageRef {
        self.table.message(index)
    }

    pub(crate) fn table(self) -> &'static Table {
        self.table
    }

    /// The Go type's short name (`core/v1.Pod`).
    pub fn name(self) -> &'static str {
        self.msg.name
    }

    /// The Kubernetes minor version of the table this message is from (`1.35`).
    pub fn kubernetes_version(self) -> &'static str {
        self.table.version
    }

    /// The message of this message's field `json` (its JSON name), if that field holds one.
    pub(crate) fn field_message(self, json: &str, repeated: bool) -> Option<MessageRef> {
        self.msg
            .fields
            .iter()
            .find(|f| f.json == json && f.repeated() == repeated)
            .and_then(|f| match f.kind {
                Kind::Msg(m) => Some(self.sibling(m)),
                _ => None,
            })
    }

    /// The message of a list's items: the list message's `items` field.
    pub fn items(self) -> Option<MessageRef> {
        self.field_message("items", true)
    }
}
