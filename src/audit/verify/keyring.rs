//! What each public key given to `audit verify` signed: its seals, the
//! earliest and the latest of them, and the places where it signed a
//! chain's seal again after a newer key had. Seals name no key, so a seal's
//! key is the one its signature verifies with. Pure; the signatures are
//! checked as the seals are read, in the parent module.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write;
use std::time::{Duration, UNIX_EPOCH};

use super::chain::{Chain, SealRec};
use super::report::{KeyReport, SealRef, SignedAgain};
use crate::audit::keys::KnownKey;
use crate::audit::seal::ChainId;

/// One report per key of `keys`, in their order, over the seals of
/// `chains`.
///
/// Within a chain, seals are taken in chain order (by number; seals of one
/// number, a worker's reseals, as read), and a key is *newer* than another
/// when it first signed there after the other did. A key that signs a seal
/// right after a newer key signed the one before signs again after it
/// (`A, B, A`: the second `A`), which a rolling restart or a rollback does,
/// and so does a retired key still in use: the report names the seal, and
/// the reader tells the two apart by its time.
pub(super) fn tally(keys: &[KnownKey], chains: &BTreeMap<ChainId, Chain>) -> Vec<KeyReport> {
    let mut out: Vec<KeyReport> = keys.iter().map(KeyReport::of).collect();
    for (id, chain) in chains {
        let mut signed: Vec<(usize, &SealRec)> = chain
            .seals
            .iter()
            .filter_map(|s| Some((s.signer?, s)))
            .collect();
        signed.sort_by_key(|(_, s)| (s.seq, s.at));
        // A copy of a seal (a producer's retry) is the same signature.
        let mut seen: HashSet<([u8; 32], usize)> = HashSet::new();
        // Each key's rank in the chain: 0 for the first to sign, and so on.
        let mut rank: HashMap<usize, usize> = HashMap::new();
        let mut previous: Option<usize> = None;
        for (k, s) in signed {
            if !seen.insert((s.hash, k)) {
                continue;
            }
            let seal = seal_ref(id, s);
            let newer = previous
                .filter(|&p| p != k && rank.get(&k).is_some_and(|own| rank.get(&p) > Some(own)));
            if let Some(p) = newer
                && let (Some(after), Some(r)) = (keys.get(p), out.get_mut(k))
            {
                r.signed_again.push(SignedAgain {
                    seal: seal.clone(),
                    after: after.fingerprint.clone(),
                });
            }
            let next = rank.len();
            rank.entry(k).or_insert(next);
            previous = Some(k);
            if let Some(r) = out.get_mut(k) {
                r.signed(&seal);
            }
        }
    }
    out
}

fn seal_ref(id: &ChainId, s: &SealRec) -> SealRef {
    SealRef {
        topic: id.topic.clone(),
        partition: id.partition,
        run: s.run.clone(),
        seq: s.seq,
        ts: s.ts,
        time: s.ts.and_then(rfc3339),
        at: s.at,
    }
}

/// A seal's `ts` (nanoseconds since the epoch) in RFC 3339, UTC, to the
/// millisecond; `None` before the epoch.
fn rfc3339(ts: i64) -> Option<String> {
    let nanos = u64::try_from(ts).ok()?;
    let t = UNIX_EPOCH.checked_add(Duration::from_nanos(nanos))?;
    let mut text = String::new();
    write!(text, "{}", humantime::format_rfc3339_millis(t)).ok()?;
    Some(text)
}
