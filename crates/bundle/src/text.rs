//! The short-text field encoding used for names, services and field keys.
//!
//! A text field is `varint(len << 1 | packed)` followed by `len` bytes of UTF-8 when
//! `packed = 0`, or, when `packed = 1`, `len` ASCII characters coded with the fixed
//! canonical Huffman code below (most significant bit first, zero-padded to a byte).
//! The encoder packs only when the text is ASCII and packing is strictly shorter; the
//! decoder accepts only that choice, so each text has one encoding. Radio airtime is
//! mostly manifests, and a 20-character file name packs into about 13 bytes.
//!
//! [`printable`] is how such text (peer-authored: names, field keys and values) is shown
//! on a terminal. The encoding itself accepts any UTF-8.

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::varint;

/// Huffman code length of each ASCII byte (0..=127), from a filename-shaped frequency
/// model: lowercase, digits and `.-_` are short; control characters are long. The code
/// is complete (Kraft sum exactly 1). Changing this table changes the wire format.
#[rustfmt::skip]
pub const CODE_LENGTHS: [u8; 128] = [
    19, 19, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18,
    18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18, 18,
    6, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 9, 5, 5, 7,
    5, 5, 5, 6, 6, 6, 7, 7, 7, 7, 8, 12, 12, 12, 12, 12,
    12, 7, 9, 9, 8, 7, 9, 9, 8, 7, 13, 10, 8, 9, 8, 7,
    9, 14, 8, 8, 7, 9, 10, 9, 13, 9, 14, 12, 12, 12, 12, 5,
    12, 4, 7, 6, 5, 4, 6, 6, 5, 5, 10, 8, 5, 6, 5, 4,
    6, 11, 5, 5, 4, 6, 7, 6, 10, 6, 11, 12, 12, 12, 12, 18,
];

struct Code {
    /// Code word of each symbol, right-aligned.
    codes: [u32; 128],
    /// Per length: the first code word and the index of its first symbol in `sorted`.
    first_code: [u32; 33],
    first_index: [u16; 33],
    count: [u16; 33],
    /// Symbols ordered by (length, value): the canonical order.
    sorted: Vec<u8>,
}

fn code() -> &'static Code {
    static CODE: OnceLock<Code> = OnceLock::new();
    CODE.get_or_init(|| {
        let mut count = [0u16; 33];
        for &l in &CODE_LENGTHS {
            count[l as usize] += 1;
        }
        let mut sorted: Vec<u8> = (0..128u8).collect();
        sorted.sort_by_key(|&s| (CODE_LENGTHS[s as usize], s));
        let mut first_code = [0u32; 33];
        let mut first_index = [0u16; 33];
        let (mut code, mut index) = (0u32, 0u16);
        for len in 1..33 {
            code = (code + u32::from(count[len - 1])) << 1;
            first_code[len] = code;
            first_index[len] = index;
            index += count[len];
        }
        let mut codes = [0u32; 128];
        let mut next = first_code;
        for &s in &sorted {
            let l = CODE_LENGTHS[s as usize] as usize;
            codes[s as usize] = next[l];
            next[l] += 1;
        }
        Code {
            codes,
            first_code,
            first_index,
            count,
            sorted,
        }
    })
}

/// Bytes the packed form of `s` takes, or `None` if `s` is not ASCII.
fn packed_len(s: &str) -> Option<usize> {
    if !s.is_ascii() {
        return None;
    }
    let bits: usize = s.bytes().map(|b| CODE_LENGTHS[b as usize] as usize).sum();
    Some(bits.div_ceil(8))
}

/// Encoded size of the text field for `s`.
pub fn encoded_len(s: &str) -> usize {
    let (body, _) = choose(s);
    varint::len((s.len() as u64) << 1) + body
}

fn choose(s: &str) -> (usize, bool) {
    match packed_len(s) {
        Some(p) if p < s.len() => (p, true),
        _ => (s.len(), false),
    }
}

/// Appends the text field for `s`.
pub fn put(out: &mut Vec<u8>, s: &str) {
    let (_, packed) = choose(s);
    varint::put(out, ((s.len() as u64) << 1) | u64::from(packed));
    if !packed {
        out.extend_from_slice(s.as_bytes());
        return;
    }
    let code = code();
    let (mut acc, mut nbits) = (0u64, 0u32);
    for b in s.bytes() {
        let l = u32::from(CODE_LENGTHS[b as usize]);
        acc = (acc << l) | u64::from(code.codes[b as usize]);
        nbits += l;
        while nbits >= 8 {
            nbits -= 8;
            out.push((acc >> nbits) as u8);
        }
        acc &= (1u64 << nbits) - 1;
    }
    if nbits > 0 {
        out.push((acc << (8 - nbits)) as u8);
    }
}

/// Why a text field could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    Truncated,
    TooLong,
    InvalidUtf8,
    /// Bad padding, an impossible code word, or a packing choice the encoder would not make.
    NonCanonical,
}

/// Reads a text field of at most `max` bytes from the front of `buf`.
pub fn get(buf: &[u8], max: usize) -> Result<(String, usize), TextError> {
    let (head, mut used) = varint::get(buf).map_err(|e| match e {
        varint::VarintError::Truncated => TextError::Truncated,
        varint::VarintError::NonCanonical => TextError::NonCanonical,
    })?;
    let len = usize::try_from(head >> 1).map_err(|_| TextError::TooLong)?;
    if len > max {
        return Err(TextError::TooLong);
    }
    let rest = &buf[used..];
    if head & 1 == 0 {
        let bytes = rest.get(..len).ok_or(TextError::Truncated)?;
        let s = std::str::from_utf8(bytes).map_err(|_| TextError::InvalidUtf8)?;
        if choose(s).1 {
            return Err(TextError::NonCanonical);
        }
        return Ok((s.to_owned(), used + len));
    }
    let code = code();
    let mut out = String::with_capacity(len);
    let mut bits = rest
        .iter()
        .flat_map(|&b| (0..8).rev().map(move |i| (b >> i) & 1));
    let mut consumed_bits = 0usize;
    while out.len() < len {
        let mut c = 0u32;
        let mut l = 0usize;
        loop {
            let bit = bits.next().ok_or(TextError::Truncated)?;
            consumed_bits += 1;
            c = (c << 1) | u32::from(bit);
            l += 1;
            if l > 32 {
                return Err(TextError::NonCanonical);
            }
            let off = c.wrapping_sub(code.first_code[l]);
            if c >= code.first_code[l] && off < u32::from(code.count[l]) {
                out.push(char::from(
                    code.sorted[code.first_index[l] as usize + off as usize],
                ));
                break;
            }
        }
    }
    let nbytes = consumed_bits.div_ceil(8);
    // Padding bits must be zero, and packing must have been the encoder's choice.
    let pad = nbytes * 8 - consumed_bits;
    if pad > 0 && rest[nbytes - 1] & ((1u8 << pad) - 1) != 0 {
        return Err(TextError::NonCanonical);
    }
    if !choose(&out).1 {
        return Err(TextError::NonCanonical);
    }
    used += nbytes;
    Ok((out, used))
}

/// Whether `c` may not reach a terminal as itself: C0 controls, DEL, C1 controls (ESC
/// and CSI among them), the bidirectional marks, embeddings, overrides and isolates, and
/// the Unicode line and paragraph separators.
fn unprintable(c: char) -> bool {
    matches!(c,
        '\0'..='\x1f' | '\x7f'..='\u{9f}'
        | '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` made safe to print on a terminal: each character that could move the cursor,
/// start an escape sequence, break the line or reorder what follows is replaced by a
/// visible escape (`\n`, `\r`, `\t`, `\x1b`, `\u{202e}`), so text from a peer can
/// neither forge a row nor reach the terminal's controls. Anything else is unchanged
/// (and not copied).
pub fn printable(s: &str) -> Cow<'_, str> {
    use std::fmt::Write as _;
    if !s.chars().any(unprintable) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_ascii() && unprintable(c) => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c if unprintable(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_escapes_every_control_and_keeps_the_rest() {
        assert!(matches!(printable("obs-2026.csv"), Cow::Borrowed(_)));
        assert_eq!(
            printable("caf\u{e9} \u{1f4e1} a\\b"),
            "caf\u{e9} \u{1f4e1} a\\b"
        );
        assert_eq!(
            printable("evil\x1b[2J\nfake row"),
            "evil\\x1b[2J\\nfake row"
        );
        assert_eq!(printable("a\tb\rc\0d\x7f"), "a\\tb\\rc\\x00d\\x7f");
        assert_eq!(printable("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(printable("txt.\u{202e}exe"), "txt.\\u{202e}exe");
        assert_eq!(printable("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
        assert_eq!(printable("a\u{2028}b"), "a\\u{2028}b");
        // Every character of the classes, and nothing printable comes out changed.
        for c in (0..0x20u32)
            .chain(0x7f..0xa0)
            .chain(0x202a..0x202f)
            .chain(0x2066..0x206a)
            .filter_map(char::from_u32)
        {
            let p = printable(&c.to_string()).into_owned();
            assert!(
                p.starts_with('\\') && p.chars().all(|c| c.is_ascii_graphic()),
                "{c:?}: {p}"
            );
        }
        for c in "\u{61c}\u{200e}\u{200f}\u{2029}".chars() {
            assert!(printable(&c.to_string()).starts_with("\\u{"), "{c:?}");
        }
    }

    #[test]
    fn code_is_complete() {
        let kraft: f64 = CODE_LENGTHS.iter().map(|&l| 2f64.powi(-i32::from(l))).sum();
        assert!((kraft - 1.0).abs() < 1e-12, "Kraft sum {kraft}");
    }

    #[test]
    fn fixed_bytes() {
        // 'a' has a 4-bit code, 'e' too; see docs/bundle-format.md for the table.
        let mut out = Vec::new();
        put(&mut out, "hello-world-20-chars");
        assert_eq!(out.len(), 14, "{out:02x?}");
        assert_eq!(out[0], (20 << 1) | 1);
        let mut raw = Vec::new();
        put(&mut raw, "\u{e9}t\u{e9}");
        assert_eq!(raw, [0x0a, 0xc3, 0xa9, b't', 0xc3, 0xa9]);
        let mut short = Vec::new();
        put(&mut short, "a");
        // one character never packs shorter than one byte: stored raw
        assert_eq!(short, [0x02, b'a']);
    }

    #[test]
    fn rejects_non_canonical() {
        // "abcdefgh" raw although packing is shorter
        let mut raw = vec![16u8];
        raw.extend_from_slice(b"abcdefgh");
        assert_eq!(get(&raw, 64), Err(TextError::NonCanonical));
        // nonzero padding
        let mut packed = Vec::new();
        put(&mut packed, "abcdefgh");
        let last = packed.len() - 1;
        let (s, _) = get(&packed, 64).unwrap();
        assert_eq!(s, "abcdefgh");
        packed[last] |= 1;
        assert!(get(&packed, 64).is_err());
        assert_eq!(get(&[0x80 | 40, 0x01], 10), Err(TextError::TooLong));
        assert_eq!(get(&[0x09, 0xff], 64), Err(TextError::Truncated));
    }

    proptest::proptest! {
        #[test]
        fn round_trip(s in "\\PC{0,40}|[a-zA-Z0-9._ -]{0,60}") {
            let mut out = Vec::new();
            put(&mut out, &s);
            proptest::prop_assert_eq!(out.len(), encoded_len(&s));
            let (back, used) = get(&out, 256).unwrap();
            proptest::prop_assert_eq!(back, s);
            proptest::prop_assert_eq!(used, out.len());
        }

        #[test]
        fn printable_leaves_no_control(cs in proptest::collection::vec(proptest::char::any(), 0..40)) {
            let s: String = cs.into_iter().collect();
            let p = printable(&s);
            proptest::prop_assert!(!p.chars().any(unprintable), "{:?}", p);
            if !s.chars().any(unprintable) {
                proptest::prop_assert_eq!(p.as_ref(), s.as_str());
            }
        }

        #[test]
        fn never_panics(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..64)) {
            let _ = get(&bytes, 64);
        }
    }
}
