//! The protobuf wire format, read defensively: every length is checked against what is left.

use crate::ProtoError;

/// One field's value as it stands on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum WireValue<'a> {
    /// Wire type 0.
    Varint(u64),
    /// Wire type 1.
    Fixed64(u64),
    /// Wire type 2.
    Bytes(&'a [u8]),
    /// Wire type 5.
    Fixed32(u32),
}

/// Reads one varint from the front of `buf`.
#[inline]
pub(crate) fn read_varint(buf: &mut &[u8]) -> Result<u64, ProtoError> {
    // one byte: every field key of a built-in type, most lengths and small numbers
    if let Some((&b, rest)) = buf.split_first()
        && b < 0x80
    {
        *buf = rest;
        return Ok(u64::from(b));
    }
    let mut out = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf.split_first().ok_or(ProtoError::Truncated)?;
        *buf = rest;
        out |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err(ProtoError::Malformed("varint longer than 10 bytes"))
}

/// An iterator over the fields of one message.
pub(crate) struct Fields<'a> {
    buf: &'a [u8],
}

impl<'a> Fields<'a> {
    pub(crate) fn new(buf: &'a [u8]) -> Fields<'a> {
        Fields { buf }
    }

    fn read(&mut self) -> Result<(u32, WireValue<'a>), ProtoError> {
        let key = read_varint(&mut self.buf)?;
        let num = u32::try_from(key >> 3).map_err(|_| ProtoError::Malformed("field number"))?;
        if num == 0 {
            return Err(ProtoError::Malformed("field number 0"));
        }
        let v = match key & 7 {
            0 => WireValue::Varint(read_varint(&mut self.buf)?),
            1 => {
                let (b, rest) = self
                    .buf
                    .split_first_chunk::<8>()
                    .ok_or(ProtoError::Truncated)?;
                self.buf = rest;
                WireValue::Fixed64(u64::from_le_bytes(*b))
            }
            2 => {
                let n = usize::try_from(read_varint(&mut self.buf)?)
                    .map_err(|_| ProtoError::Truncated)?;
                if self.buf.len() < n {
                    return Err(ProtoError::Truncated);
                }
                let (b, rest) = self.buf.split_at(n);
                self.buf = rest;
                WireValue::Bytes(b)
            }
            5 => {
                let (b, rest) = self
                    .buf
                    .split_first_chunk::<4>()
                    .ok_or(ProtoError::Truncated)?;
                self.buf = rest;
                WireValue::Fixed32(u32::from_le_bytes(*b))
            }
            _ => return Err(ProtoError::Malformed("unsupported wire type (groups)")),
        };
        Ok((num, v))
    }
}

impl<'a> Iterator for Fields<'a> {
    type Item = Result<(u32, WireValue<'a>), ProtoError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.buf.is_empty() {
            return None;
        }
        let r = self.read();
        if r.is_err() {
            self.buf = &[];
        }
        Some(r)
    }
}

/// Appends a varint.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a field key.
pub(crate) fn put_key(out: &mut Vec<u8>, num: u32, wire: u8) {
    put_varint(out, (u64::from(num) << 3) | u64::from(wire));
}

/// Appends a length-delimited field.
pub(crate) fn put_bytes(out: &mut Vec<u8>, num: u32, b: &[u8]) {
    put_key(out, num, 2);
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Appends a varint field.
pub(crate) fn put_varint_field(out: &mut Vec<u8>, num: u32, v: u64) {
    put_key(out, num, 0);
    put_varint(out, v);
}

/// Starts a length-delimited field whose length is not known yet; [`end_nested`] finishes it.
/// Returns the position of the payload.
pub(crate) fn begin_nested(out: &mut Vec<u8>, num: u32) -> usize {
    put_key(out, num, 2);
    // one byte reserved for the length; end_nested moves the payload when it needs more
    out.push(0);
    out.len()
}

/// Finishes a field begun with [`begin_nested`].
pub(crate) fn end_nested(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    if len < 0x80 {
        out[start - 1] = len as u8;
        return;
    }
    let mut prefix = Vec::with_capacity(10);
    put_varint(&mut prefix, len as u64);
    let extra = prefix.len() - 1;
    out.splice(start - 1..start, prefix);
    debug_assert_eq!(out.len() - start - extra, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_lengths_of_every_size() {
        for len in [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000] {
            let mut out = vec![9u8];
            let start = begin_nested(&mut out, 3);
            out.extend(std::iter::repeat_n(7u8, len));
            end_nested(&mut out, start);
            let mut f = Fields::new(&out[1..]);
            let (num, v) = f.next().unwrap().unwrap();
            assert_eq!(num, 3);
            assert_eq!(v, WireValue::Bytes(&vec![7u8; len][..]));
            assert!(f.next().is_none());
        }
    }

    #[test]
    fn malformed_input_is_an_error() {
        for bad in [
            &b"\x0a\x05ab"[..],
            b"\x08",
            b"\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff",
            b"\x0b",
            b"\x00\x01",
            b"\x09\x01\x02",
        ] {
            assert!(
                Fields::new(bad).any(|r| r.is_err()),
                "{bad:?} should not decode"
            );
        }
    }
}
