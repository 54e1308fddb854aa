//! The low-level machinery of the grounding check: the ASCII word scanner,
//! term hashing, and the open-addressing table its memo and source index
//! are built on.
//!
//! Everything here is about speed, nothing about judgement: which words
//! count, how they weigh and how a claim is scored live in `grounding`.
//! Pure: no I/O, no clock, no allocation per word (tables grow, never per
//! lookup).

/// Multiplier of the FxHash-style mixing step.
const K: u64 = 0x517c_c1b7_2722_0a95;
const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// One FxHash-style step: folds `x` into the running hash `h` (order
/// matters).
pub(crate) fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(K)
}

/// The bytes of `s` (fewer than 8) as a zero-padded little-endian word, in
/// at most three loads whatever the length (no byte loop, no copy).
#[inline(always)]
fn tail_word(s: &[u8]) -> u64 {
    let n = s.len();
    debug_assert!(n < 8);
    if n >= 4 {
        let lo = u64::from(u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
        let hi = u64::from(u32::from_le_bytes([s[n - 4], s[n - 3], s[n - 2], s[n - 1]]));
        // The overlapping bytes are the same bytes: `|` keeps them.
        lo | (hi << ((n - 4) * 8))
    } else if n > 0 {
        u64::from(s[0])
            | (u64::from(s[n / 2]) << (n / 2 * 8))
            | (u64::from(s[n - 1]) << ((n - 1) * 8))
    } else {
        0
    }
}

/// Hash of `s`, 8 bytes per mixing step (the tail zero-padded; the length
/// is the seed, so padding cannot make two strings equal). Collisions at
/// 64 bits are negligible next to the lexical approximation itself; two
/// different strings of at most 8 bytes never collide (one step, an odd
/// multiplier).
pub(crate) fn term_hash(s: &str) -> u64 {
    bytes_hash(s.as_bytes())
}

/// [`term_hash`] of the string whose bytes are `b`.
pub(crate) fn bytes_hash(b: &[u8]) -> u64 {
    hash_with(b, |x| x)
}

/// What one pass over an ASCII word learns: [`term_hash`] of the word
/// lowercased (without copying it: each 8-byte word is lowercased in a
/// register) and its byte classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AsciiWord {
    pub hash: u64,
    /// Its first byte is `A`..=`Z`.
    pub upper_first: bool,
    /// It holds a byte `a`..=`z`.
    pub lower: bool,
}

/// [`AsciiWord`] of `s`, which must be ASCII.
#[inline(always)]
pub(crate) fn ascii_word(s: &[u8]) -> AsciiWord {
    let mut lower = 0u64;
    let hash = hash_with(s, |x| {
        let upper = in_range(x, b'A', b'Z');
        lower |= in_range(x, b'a', b'z');
        x | (upper >> 2)
    });
    AsciiWord {
        hash,
        upper_first: s.first().is_some_and(u8::is_ascii_uppercase),
        lower: lower != 0,
    }
}

#[inline(always)]
fn hash_with(s: &[u8], mut map: impl FnMut(u64) -> u64) -> u64 {
    let mut h = s.len() as u64;
    let (words, tail) = s.as_chunks::<8>();
    for w in words {
        h = mix(h, map(u64::from_le_bytes(*w)));
    }
    if !tail.is_empty() {
        h = mix(h, map(tail_word(tail)));
    }
    h
}

/// High bit of each byte of `x` that lies in `lo..=hi` (bytes of `x` are
/// ASCII, `hi` < 0x7f: no addition carries into the next byte).
#[inline(always)]
fn in_range(x: u64, lo: u8, hi: u8) -> u64 {
    let above_lo = x.wrapping_add(u64::from(0x80 - lo) * ONES);
    let above_hi = x.wrapping_add(u64::from(0x7f - hi) * ONES);
    above_lo & !above_hi & HIGH
}

/// The leading ASCII letters and digits of the 8 bytes of `x` (any bytes):
/// how many there are, and `x` with its ASCII capitals lower-cased.
#[inline(always)]
pub(crate) fn leading_alnum_lowered(x: u64) -> (usize, u64) {
    // Bytes past ASCII are cleared first: the ranges below must not carry.
    let y = x & !HIGH;
    let upper = in_range(y, b'A', b'Z');
    let alnum = (upper | in_range(y, b'a', b'z') | in_range(y, b'0', b'9')) & !x;
    let leading = (!alnum & HIGH).trailing_zeros() as usize / 8;
    (leading, x | (upper >> 2))
}

/// High bit of each byte of the ASCII word `x` that is a letter, a digit or `_`.
#[inline(always)]
fn word_bytes(x: u64) -> u64 {
    let folded = x | (0x20 * ONES);
    in_range(folded, b'a', b'z') | in_range(x, b'0', b'9') | in_range(x, b'_', b'_')
}

/// High bit of each byte of `x` (any bytes) that is an ASCII letter, a
/// digit, `'` or `-`: the bytes of a name's words (see [`name_words`]).
#[inline(always)]
fn name_bytes(x: u64) -> u64 {
    // Bytes past ASCII are cleared first: the ranges below must not carry.
    let y = x & !HIGH;
    let folded = y | (0x20 * ONES);
    let marks = in_range(y, b'\'', b'\'') | in_range(y, b'-', b'-');
    (in_range(folded, b'a', b'z') | in_range(y, b'0', b'9') | marks) & !x
}

/// Bit `i` set when byte `i` of `block` (at most 64 bytes) is a word
/// byte: for `NAMES`, of [`name_bytes`] (any bytes); else a letter, a
/// digit or `_` (ASCII bytes only).
#[inline(always)]
fn word_bits<const NAMES: bool>(block: &[u8]) -> u64 {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    if let Ok(whole) = <&[u8; 64]>::try_from(block) {
        // SAFETY: built only for a target that enables SSE2, so the
        // processor running it has SSE2.
        #[allow(unsafe_code)]
        let bits = unsafe { word_bits_sse2::<NAMES>(whole) };
        return bits;
    }
    let class = |x: u64| if NAMES { name_bytes(x) } else { word_bytes(x) };
    let (words, tail) = block.as_chunks::<8>();
    let mut bits = 0u64;
    for (i, w) in words.iter().enumerate() {
        bits |= gather(class(u64::from_le_bytes(*w))) << (i * 8);
    }
    if !tail.is_empty() {
        bits |= gather(class(tail_word(tail))) << (words.len() * 8);
    }
    bits
}

/// [`word_bits`] of a whole block, 16 bytes at a time with SSE2 (which
/// every x86-64 processor has): the same bits, in about a third of the
/// instructions. Each class is a range test made one signed comparison by
/// an offset that moves the range to the bottom of the signed bytes, which
/// holds for any byte, ASCII or not.
#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
#[target_feature(enable = "sse2")]
#[inline]
fn word_bits_sse2<const NAMES: bool>(block: &[u8; 64]) -> u64 {
    use std::arch::x86_64::{
        __m128i, _mm_add_epi8, _mm_cmpeq_epi8, _mm_cmplt_epi8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set_epi64x, _mm_set1_epi8,
    };
    // Each byte in `lo..lo + len`: that range moved to the lowest signed
    // bytes, then one comparison.
    let below = |x: __m128i, lo: u8, len: u8| {
        let moved = _mm_add_epi8(x, _mm_set1_epi8(0x80u8.wrapping_sub(lo) as i8));
        _mm_cmplt_epi8(moved, _mm_set1_epi8(0x80u8.wrapping_add(len) as i8))
    };
    let (lanes, _) = block.as_chunks::<16>();
    let mut bits = 0u64;
    for (i, lane) in lanes.iter().enumerate() {
        let (lo, hi) = lane.split_at(8);
        let word = |h: &[u8]| i64::from_le_bytes(h.try_into().unwrap_or_default());
        let x = _mm_set_epi64x(word(hi), word(lo));
        let letters = below(_mm_or_si128(x, _mm_set1_epi8(0x20)), b'a', 26);
        let digits = below(x, b'0', 10);
        let marks = if NAMES {
            _mm_or_si128(
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b'\'' as i8)),
                _mm_cmpeq_epi8(x, _mm_set1_epi8(b'-' as i8)),
            )
        } else {
            _mm_cmpeq_epi8(x, _mm_set1_epi8(b'_' as i8))
        };
        let m = _mm_or_si128(_mm_or_si128(letters, digits), marks);
        bits |= u64::from(_mm_movemask_epi8(m) as u16) << (i * 16);
    }
    bits
}

/// The high bits of the 8 bytes of `m` as the 8 low bits of the result.
#[inline(always)]
fn gather(m: u64) -> u64 {
    // Byte i's bit lands on bit 56 + i; the other products fall below bit
    // 56 at distinct positions (no carry) or above bit 63.
    ((m >> 7).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Word-byte bits of a text (see [`word_bits`]), computed 64 bytes at a
/// time as the scan moves forward.
struct WordBits<'a, const NAMES: bool> {
    b: &'a [u8],
    /// Start of the block whose bits are in `bits` (`usize::MAX`: none yet).
    at: usize,
    bits: u64,
}

impl<const NAMES: bool> WordBits<'_, NAMES> {
    /// First position at or after `from` holding a word byte (`word`) or a
    /// non-word byte (`!word`); the text's length when there is none.
    #[inline(always)]
    fn find(&mut self, from: usize, word: bool) -> usize {
        // Most words start and end in the block already loaded.
        let off = from.wrapping_sub(self.at);
        if off < 64 {
            let x = if word { self.bits } else { !self.bits } >> off;
            if x != 0 {
                // Bits past the text's end are clear, so a non-word search
                // stops at the end at the latest.
                return from + x.trailing_zeros() as usize;
            }
        }
        self.find_on(from, word)
    }

    /// [`WordBits::find`] past the loaded block.
    #[inline]
    fn find_on(&mut self, mut from: usize, word: bool) -> usize {
        let n = self.b.len();
        while from < n {
            let block = from & !63;
            if block != self.at {
                self.at = block;
                self.bits = word_bits::<NAMES>(&self.b[block..n.min(block + 64)]);
            }
            let x = if word { self.bits } else { !self.bits } >> (from - block);
            if x != 0 {
                return from + x.trailing_zeros() as usize;
            }
            from = block + 64;
        }
        n
    }
}

/// Calls `f(word, offset)` for every word of the ASCII `chunk` (`offset` is
/// `base` plus the word's start in `chunk`), as bytes: slicing ASCII needs
/// no character-boundary checks. UAX #29 for ASCII: letters, digits and `_`
/// join; `'` `.` `:` join letters; `,` `.` `'` `;` join digits; except
/// that a period gluing two sentences ("Hour.Mount": see
/// `glued_sentences`) parts them.
///
/// Read 64 bytes at a time: one bit per word byte, and from those one bit
/// at each run's first byte and at the byte past its last, taken lowest
/// first, so a word costs two bit operations, not two searches.
#[inline]
pub(crate) fn ascii_words<'a>(chunk: &'a str, base: usize, f: &mut impl FnMut(&'a [u8], usize)) {
    let b = chunk.as_bytes();
    let n = b.len();
    // Runs' edges alternate: the next one ends a run.
    let mut in_run = false;
    // Where the word being read starts (valid in a run).
    let mut start = 0;
    // The run just ended at a byte that joins it to the next one: the
    // next run (which starts right after) continues the word.
    let mut joined = false;
    // Whether the previous block's last byte is a word byte.
    let mut carry = 0u64;
    for (k, block) in b.chunks(64).enumerate() {
        let at = k * 64;
        let bits = word_bits::<false>(block);
        // Bits past the text's end are clear: a run reaching the end of a
        // short last block ends at `n`.
        let mut edges = bits ^ (bits << 1 | carry);
        carry = bits >> 63;
        while edges != 0 {
            let p = at + edges.trailing_zeros() as usize;
            edges &= edges - 1;
            if !in_run {
                in_run = true;
                if !joined {
                    start = p;
                }
                joined = false;
                continue;
            }
            in_run = false;
            // `b[p + 1]` is a word byte when the join holds: the scan moves on.
            // Most words end at a space: test the middle byte before its neighbours.
            if p + 1 < n
                && JOINERS[usize::from(b[p])]
                && joins(b[p - 1], b[p], b[p + 1])
                && !glued_sentences(b, p)
            {
                joined = true;
            } else {
                f(&b[start..p], base + start);
            }
        }
    }
    // A run up to the end of a text of whole blocks.
    if in_run {
        f(&b[start..n], base + start);
    }
}

/// The words of `text` (any bytes) as the acronym scans read them: runs
/// of ASCII letters, digits, `'` and `-`, each with where it ends.
pub(crate) fn name_words(text: &[u8]) -> impl Iterator<Item = (&[u8], usize)> {
    let mut bits = WordBits::<true> {
        b: text,
        // Far from any position: the first search loads a block.
        at: usize::MAX / 2,
        bits: 0,
    };
    let mut at = 0;
    std::iter::from_fn(move || {
        let start = bits.find(at, true);
        if start >= text.len() {
            return None;
        }
        at = bits.find(start, false);
        Some((&text[start..at], at))
    })
}

/// Bytes that may join two runs of word bytes into one word.
const JOINERS: [bool; 256] = {
    let mut t = [false; 256];
    t[b'\'' as usize] = true;
    t[b'.' as usize] = true;
    t[b':' as usize] = true;
    t[b',' as usize] = true;
    t[b';' as usize] = true;
    t
};

/// Whether the period at `p` of `b` glues two sentences together
/// ("Hour.Mount", "pm.Shares", "1990s.Radio"): a lower-case letter after
/// another letter (or the "s" of a decade) before it, a sentence's first
/// word after it ([`opens_glued_sentence`]). It ends a word there, so that
/// a sentence's first word is read as a word of its own.
#[cold]
#[inline(never)]
pub(crate) fn glued_sentences(b: &[u8], p: usize) -> bool {
    b[p] == b'.' && lower_word_ends(b, p) && opens_glued_sentence(b, p)
}

/// Whether the text after the period at `p` of `b` opens a sentence glued
/// to it: a capital and a lower-case letter, in a word that is no host
/// name ([`host_goes_on`]). The word scanner and the sentence rule both
/// ask it, so they part the same words.
pub(crate) fn opens_glued_sentence(b: &[u8], p: usize) -> bool {
    b.get(p + 1).is_some_and(u8::is_ascii_uppercase)
        && b.get(p + 2).is_some_and(u8::is_ascii_lowercase)
        && !host_goes_on(b, p)
}

/// Whether the word after the period at `p` of `b` goes on past another
/// period into a lower-case letter or a digit ("www.Geniewards.ca"): a
/// host name, whose capital opens no sentence. A capital there is a third
/// sentence glued on ("including:Auditory.Cognitive.Neurological.").
fn host_goes_on(b: &[u8], p: usize) -> bool {
    let end = b[p + 1..]
        .iter()
        .position(|c| !c.is_ascii_alphanumeric())
        .map_or(b.len(), |k| p + 1 + k);
    end + 1 < b.len()
        && b[end] == b'.'
        && (b[end + 1].is_ascii_lowercase() || b[end + 1].is_ascii_digit())
}

/// Whether `b[..p]` ends in a lower-case letter after another letter
/// ("Hour", "pm") or in a decade ("1990s"): the words that a period may
/// glue to the next sentence, for the word scanner and the sentence rule
/// alike.
pub(crate) fn lower_word_ends(b: &[u8], p: usize) -> bool {
    p >= 2
        && b[p - 1].is_ascii_lowercase()
        && (b[p - 2].is_ascii_alphabetic()
            || (b[p - 1] == b's' && p >= 3 && b[p - 3..p - 1].iter().all(u8::is_ascii_digit)))
}

/// Whether `mid` joins the word bytes `prev` and `next` into one word.
#[inline(always)]
fn joins(prev: u8, mid: u8, next: u8) -> bool {
    let letters = || prev.is_ascii_alphabetic() && next.is_ascii_alphabetic();
    let digits = || prev.is_ascii_digit() && next.is_ascii_digit();
    match mid {
        b'\'' | b'.' => letters() || digits(),
        b':' => letters(),
        b',' | b';' => digits(),
        _ => false,
    }
}

/// An open-addressing hash table keyed by 64-bit term hashes (already
/// mixed, so their top bits index it directly): linear probing, a power of
/// two slots at most 3/4 full. A slot is live when its stamp is the
/// table's, so emptying the table is one increment, not a pass over memory.
pub(crate) struct Table<V> {
    slots: Vec<Slot<V>>,
    stamp: u32,
    len: usize,
    shift: u32,
}

#[derive(Clone, Copy, Default)]
struct Slot<V> {
    key: u64,
    stamp: u32,
    value: V,
}

/// Fewest slots a table has.
const MIN_SLOTS: usize = 16;

impl<V: Copy + Default> Table<V> {
    /// A table with room for about `n` keys before it grows.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Table::with_slots((n + n / 3 + 1).next_power_of_two())
    }

    /// `slots` is a power of two.
    fn with_slots(slots: usize) -> Self {
        let slots = slots.max(MIN_SLOTS);
        Table {
            slots: vec![Slot::default(); slots],
            stamp: 1,
            len: 0,
            shift: 64 - slots.trailing_zeros(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn get(&self, key: u64) -> Option<V> {
        let mask = self.slots.len() - 1;
        let mut i = (key >> self.shift) as usize;
        loop {
            let s = &self.slots[i & mask];
            if s.stamp != self.stamp {
                return None;
            }
            if s.key == key {
                return Some(s.value);
            }
            i += 1;
        }
    }

    /// The value of `key`, inserted as `V::default()` when absent. Inlined:
    /// the source reader and the cache's replay call it once per pair.
    #[inline(always)]
    pub(crate) fn entry(&mut self, key: u64) -> &mut V {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.grow();
        }
        let mask = self.slots.len() - 1;
        let mut i = (key >> self.shift) as usize & mask;
        loop {
            if self.slots[i].stamp != self.stamp {
                self.len += 1;
                self.slots[i] = Slot {
                    key,
                    stamp: self.stamp,
                    value: V::default(),
                };
                break;
            }
            if self.slots[i].key == key {
                break;
            }
            i = (i + 1) & mask;
        }
        &mut self.slots[i].value
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self) {
        let mut bigger = Table::with_slots(self.slots.len() * 2);
        for s in &self.slots {
            if s.stamp == self.stamp {
                *bigger.entry(s.key) = s.value;
            }
        }
        *self = bigger;
    }

    /// Empties the table; one that grew past `keep` slots is given back to
    /// the allocator, so one huge record does not pin its memory.
    pub(crate) fn clear(&mut self, keep: usize) {
        if self.slots.len() > keep {
            *self = Table::with_slots(MIN_SLOTS);
            return;
        }
        self.len = 0;
        self.stamp = self.stamp.wrapping_add(1);
        if self.stamp == 0 {
            // Once in 2^32 clears: old stamps could come back to life.
            self.slots.fill(Slot::default());
            self.stamp = 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;
    use unicode_segmentation::UnicodeSegmentation;

    use super::*;

    /// The byte-at-a-time scanner this one replaced: the reference.
    fn reference_words(chunk: &str) -> Vec<(usize, &str)> {
        let b = chunk.as_bytes();
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            while i < b.len() && !word(b[i]) {
                i += 1;
            }
            if i >= b.len() {
                break;
            }
            let start = i;
            loop {
                while i < b.len() && word(b[i]) {
                    i += 1;
                }
                if i + 1 < b.len() {
                    let (p, m, n) = (b[i - 1], b[i], b[i + 1]);
                    // Two sentences glued by a period ("Hour.Mount") part.
                    let decade =
                        p == b's' && i >= 3 && b[i - 3..i - 1].iter().all(u8::is_ascii_digit);
                    let glued = m == b'.'
                        && p.is_ascii_lowercase()
                        && i >= 2
                        && (b[i - 2].is_ascii_alphabetic() || decade)
                        && n.is_ascii_uppercase()
                        && b.get(i + 2).is_some_and(u8::is_ascii_lowercase)
                        && !{
                            // A host name goes on past a period into a
                            // lower-case letter or a digit.
                            let mut k = i + 1;
                            while k < b.len() && b[k].is_ascii_alphanumeric() {
                                k += 1;
                            }
                            k + 1 < b.len()
                                && b[k] == b'.'
                                && (b[k + 1].is_ascii_lowercase() || b[k + 1].is_ascii_digit())
                        };
                    let letters = p.is_ascii_alphabetic()
                        && n.is_ascii_alphabetic()
                        && matches!(m, b'\'' | b'.' | b':')
                        && !glued;
                    let digits = p.is_ascii_digit()
                        && n.is_ascii_digit()
                        && matches!(m, b',' | b'.' | b'\'' | b';');
                    if letters || digits {
                        i += 1;
                        continue;
                    }
                }
                break;
            }
            out.push((start, &chunk[start..i]));
        }
        out
    }

    fn lower_ascii_hash(s: &[u8]) -> u64 {
        ascii_word(s).hash
    }

    fn words(chunk: &str) -> Vec<(usize, &str)> {
        let mut out = Vec::new();
        ascii_words(chunk, 0, &mut |w, at| {
            out.push((at, std::str::from_utf8(w).unwrap_or_default()));
        });
        out
    }

    /// The old byte-at-a-time hash: equal strings must still hash equal
    /// under the new one, and the classes below must agree with it.
    fn byte_hash(s: &[u8]) -> u64 {
        let mut h = s.len() as u64;
        for w in s.chunks(8) {
            let mut x = [0u8; 8];
            x[..w.len()].copy_from_slice(w);
            h = mix(h, u64::from_le_bytes(x));
        }
        h
    }

    /// Whole 64-byte blocks, read 16 bytes at a time where the processor
    /// allows: every byte value at every place of a block.
    #[test]
    fn whole_blocks_match_the_byte_classes() {
        for first in 0..=255u8 {
            let block: Vec<u8> = (0..64).map(|i| first.wrapping_add(i)).collect();
            let (words, names) = (word_bits::<false>(&block), word_bits::<true>(&block));
            for (i, &c) in block.iter().enumerate() {
                let name = c.is_ascii_alphanumeric() || c == b'\'' || c == b'-';
                assert_eq!(names >> i & 1 == 1, name, "byte {c:#x} at {i}");
                // The scanner's blocks are ASCII.
                if c.is_ascii() {
                    let word = c.is_ascii_alphanumeric() || c == b'_';
                    assert_eq!(words >> i & 1 == 1, word, "byte {c:#x} at {i}");
                }
            }
        }
    }

    #[test]
    fn words_across_block_boundaries_and_joins() {
        let long = "a".repeat(130);
        let text = format!("{long} it's U.S 1,000 3.5 x_y e.g. 12:30 a'1 .a, 'b' end");
        assert_eq!(words(&text), reference_words(&text));
        assert_eq!(words(&text)[0], (0, long.as_str()));
        assert_eq!(
            words(&text)[1..8].iter().map(|w| w.1).collect::<Vec<_>>(),
            ["it's", "U.S", "1,000", "3.5", "x_y", "e.g", "12"]
        );
        assert!(words("").is_empty() && words(" .,;'").is_empty());
    }

    #[test]
    fn words_at_the_ends_of_whole_blocks() {
        // A text of whole blocks whose last byte is a word byte; a join
        // whose joining byte is a block's last byte, or its first.
        for text in [
            "a".repeat(64),
            format!("{} end", "b ".repeat(62)),
            format!("{}U.S here", "x".repeat(62)),
            format!("{}3,5 and", "y ".repeat(31)),
            format!("{}it's", "z".repeat(62)),
        ] {
            assert_eq!(words(&text), reference_words(&text), "{text:?}");
        }
    }

    proptest! {
        #[test]
        fn leading_alnum_bytes_are_counted_and_lowered(bytes in proptest::array::uniform8(any::<u8>())) {
            let (n, lowered) = leading_alnum_lowered(u64::from_le_bytes(bytes));
            let want = bytes.iter().take_while(|b| b.is_ascii_alphanumeric()).count();
            prop_assert_eq!(n, want);
            let lowered = lowered.to_le_bytes();
            for (l, b) in lowered.iter().zip(&bytes).take(n) {
                prop_assert_eq!(*l, b.to_ascii_lowercase());
            }
        }
    }

    #[test]
    fn tail_words_are_zero_padded() {
        for n in 0..8 {
            let s: Vec<u8> = (1..=n as u8).collect();
            let mut x = [0u8; 8];
            x[..n].copy_from_slice(&s);
            assert_eq!(tail_word(&s), u64::from_le_bytes(x), "{n}");
        }
    }

    #[test]
    fn in_place_lowercase_hash_matches_the_folded_hash() {
        for w in [
            "",
            "a",
            "Z",
            "@[`{",
            "EMEA",
            "Expansion",
            "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "it's",
            "U.S",
            "mid_market",
            "AbCdEfGhIj",
            "zz@@[[``{{",
        ] {
            assert_eq!(
                lower_ascii_hash(w.as_bytes()),
                term_hash(&w.to_ascii_lowercase()),
                "{w}"
            );
        }
    }

    #[test]
    fn a_period_that_glues_two_sentences_parts_their_words() {
        let text = "Hour.Mount 5km.The 1990s.Radio D.C Node.js e.g.The ASP.NET 5s.The";
        let got: Vec<&str> = words(text).into_iter().map(|(_, w)| w).collect();
        assert_eq!(
            got,
            [
                "Hour", "Mount", "5km", "The", "1990s", "Radio", "D.C", "Node.js", "e.g.The",
                "ASP.NET", "5s.The"
            ]
        );
        // A host name is one word; a capital after the next period glues
        // another sentence on.
        let text = "www.Geniewards.ca Auditory.Cognitive.Neurological.";
        let got: Vec<&str> = words(text).into_iter().map(|(_, w)| w).collect();
        assert_eq!(
            got,
            ["www.Geniewards.ca", "Auditory", "Cognitive", "Neurological"]
        );
    }

    proptest! {
        #[test]
        fn the_scanner_matches_the_byte_scanner(text in "[a-zA-Z0-9_ '.:,;!?\\-]{0,200}") {
            prop_assert_eq!(words(&text), reference_words(&text));
        }

        #[test]
        fn the_scanner_matches_unicode_segmentation_on_prose(
            text in "(([A-Za-z]{1,9}|[0-9]{1,4}|[0-9]{1,3},[0-9]{3}|[A-Za-z]{1,5}'[a-z]{1,5})( |, |\\. |; )){1,20}"
        ) {
            let uax: Vec<(usize, &str)> = text.unicode_word_indices().collect();
            prop_assert_eq!(words(&text), uax);
        }

        #[test]
        fn hashes_agree(w in "[\\x00-\\x7f]{0,40}") {
            prop_assert_eq!(lower_ascii_hash(w.as_bytes()), term_hash(&w.to_ascii_lowercase()));
            prop_assert_eq!(term_hash(&w), byte_hash(w.as_bytes()));
            let b = w.as_bytes();
            let a = ascii_word(b);
            prop_assert_eq!(a.lower, b.iter().any(u8::is_ascii_lowercase));
            prop_assert_eq!(a.upper_first, b.first().is_some_and(u8::is_ascii_uppercase));
        }

        #[test]
        fn name_words_match_the_byte_scan(text in proptest::collection::vec(any::<u8>(), 0..300)) {
            let is_word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'\'' || *b == b'-';
            let mut want = Vec::new();
            let mut at = 0;
            while let Some(p) = text[at..].iter().position(is_word) {
                let start = at + p;
                at = start + text[start..].iter().take_while(|b| is_word(b)).count();
                want.push((&text[start..at], at));
            }
            prop_assert_eq!(name_words(&text).collect::<Vec<_>>(), want);
        }

        #[test]
        fn word_bits_match_the_byte_classes(block in proptest::collection::vec(0u8..0x80, 0..=64)) {
            let bits = word_bits::<false>(&block);
            for (i, &c) in block.iter().enumerate() {
                prop_assert_eq!(bits >> i & 1 == 1, c.is_ascii_alphanumeric() || c == b'_', "byte {} = {:#x}", i, c);
            }
            if block.len() < 64 {
                prop_assert_eq!(bits >> block.len(), 0);
            }
        }

        /// The table against `HashMap`: same answers through inserts,
        /// growth, clears (kept and given back) and stamp reuse.
        #[test]
        fn the_table_behaves_like_a_hash_map(
            ops in proptest::collection::vec((0u8..10, 0u64..64, any::<u64>()), 0..400),
        ) {
            let mut t: Table<u64> = Table::with_capacity(4);
            let mut m: HashMap<u64, u64> = HashMap::new();
            for (op, k, v) in ops {
                // Few distinct keys (to hit existing ones) spread over the top bits.
                let key = k.wrapping_mul(K) ^ (v & 1);
                match op {
                    0..=5 => {
                        *t.entry(key) |= v;
                        *m.entry(key).or_insert(0) |= v;
                    }
                    6 => t.clear(usize::MAX),
                    7 => t.clear(MIN_SLOTS),
                    _ => {}
                }
                if op == 6 || op == 7 {
                    m.clear();
                }
                prop_assert_eq!(t.get(key), m.get(&key).copied());
                prop_assert_eq!(t.len(), m.len());
            }
            for (k, v) in &m {
                prop_assert_eq!(t.get(*k), Some(*v));
            }
        }
    }

    #[test]
    fn a_wrapped_stamp_does_not_revive_old_keys() {
        let mut t: Table<u32> = Table::with_capacity(4);
        *t.entry(7) = 1;
        t.stamp = u32::MAX;
        *t.entry(9) = 2;
        t.clear(usize::MAX);
        assert_eq!((t.get(7), t.get(9), t.len()), (None, None, 0));
        *t.entry(9) = 3;
        assert_eq!(t.get(9), Some(3));
    }
}
