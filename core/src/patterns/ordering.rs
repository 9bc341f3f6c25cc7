//! PerProducer ordering at a receiver (GUARANTEES §3, PATTERNS §1.7, §4): messages numbered
//! by their producer are delivered with the gap they reveal (detect), or held until the missing
//! numbers arrive, bounded (reassemble: Pub/Sub copies). Pure: no I/O, so every rule is a unit
//! test.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::Hash;

use bytes::Bytes;

use crate::wire::Ordering;

/// One producer's numbering as one receiver sees it.
#[derive(Debug)]
pub(crate) struct Orderer<T> {
    level: Ordering,
    max_hold: usize,
    /// The next number expected; producers number from 1.
    expected: u64,
    /// Held copies by number (reassemble); a repeated number held twice stays twice.
    hold: BTreeMap<u64, Vec<Arrival<T>>>,
    held: usize,
}

#[derive(Debug)]
struct Arrival<T> {
    item: T,
    /// False for a copy the receiver no longer wants (its filter went away in flight): it
    /// still advances the numbering, so it is not mistaken for a drop, but is not delivered.
    wanted: bool,
}

/// What leaves the orderer: the item and the gap before it (`None` when the level is None).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Release<T> {
    pub(crate) item: T,
    pub(crate) gap: Option<u64>,
}

impl<T> Orderer<T> {
    pub(crate) fn new(level: Ordering, max_hold: usize) -> Self {
        Self {
            level,
            max_hold,
            expected: 1,
            hold: BTreeMap::new(),
            held: 0,
        }
    }

    /// Takes one arrival numbered `seq` and appends what may now be delivered to `out`.
    /// An arrival is never refused: a repeat or a late number is delivered (gap 0), not
    /// suppressed, because deduplication is not what this level promises.
    pub(crate) fn push(
        &mut self,
        seq: Option<u64>,
        item: T,
        wanted: bool,
        out: &mut VecDeque<Release<T>>,
    ) {
        let Some(seq) = seq.filter(|_| self.level != Ordering::None) else {
            if wanted {
                out.push_back(Release { item, gap: None });
            }
            return;
        };
        let a = Arrival { item, wanted };
        if seq < self.expected {
            self.emit(a, 0, out);
            return;
        }
        match self.level {
            Ordering::Reassemble if seq > self.expected => {
                self.hold.entry(seq).or_default().push(a);
                self.held += 1;
                while self.held > self.max_hold {
                    // The bound: release the oldest held number with the gap it waited for.
                    let (&first, _) = self.hold.iter().next().expect("held > 0");
                    let gap = first - self.expected;
                    self.expected = first;
                    self.release_at_expected(gap, out);
                }
            }
            _ => {
                let gap = seq - self.expected;
                self.expected = seq + 1;
                self.emit(a, gap, out);
                self.release_run(out);
            }
        }
    }

    fn emit(&self, a: Arrival<T>, gap: u64, out: &mut VecDeque<Release<T>>) {
        if a.wanted {
            out.push_back(Release {
                item: a.item,
                gap: Some(gap),
            });
        }
    }

    /// Releases everything held at `expected` (the first with `gap`), then the run after it.
    fn release_at_expected(&mut self, gap: u64, out: &mut VecDeque<Release<T>>) {
        if let Some(v) = self.hold.remove(&self.expected) {
            self.held -= v.len();
            self.expected += 1;
            let mut gap = gap;
            for a in v {
                self.emit(a, gap, out);
                gap = 0;
            }
        }
        self.release_run(out);
    }

    /// Releases the held copies that now follow on without a gap.
    fn release_run(&mut self, out: &mut VecDeque<Release<T>>) {
        while let Some(v) = self.hold.remove(&self.expected) {
            self.held -= v.len();
            self.expected += 1;
            for a in v {
                self.emit(a, 0, out);
            }
        }
    }

    /// The gap before a message numbered `seq`, under detect, which holds nothing: what a
    /// receiver that delivers as messages complete reports with each.
    pub(crate) fn detect(&mut self, seq: u64) -> u64 {
        if seq < self.expected {
            return 0;
        }
        let gap = seq - self.expected;
        self.expected = seq + 1;
        gap
    }

    /// Releases everything held, in number order, each run's first with the gap before it:
    /// the producer is gone (its connection ended, or it was forgotten past the bound), so the
    /// numbers it waited for will never come, and what it holds is delivered rather than lost.
    pub(crate) fn flush(&mut self, out: &mut VecDeque<Release<T>>) {
        while let Some((&first, _)) = self.hold.iter().next() {
            let gap = first - self.expected;
            self.expected = first;
            self.release_at_expected(gap, out);
        }
    }

    /// Copies held now (reassemble).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.held
    }
}

/// At most this many producers are remembered per receiving endpoint.
pub(crate) const MAX_PRODUCERS: usize = 1024;

/// At most this many producers are reassembled per connection. A weida publisher names one
/// producer per publisher bound (a publisher bound anew is a new one), so a connection that
/// names more is a peer inventing names, each of which could hold `max_reorder_hold` copies.
pub(crate) const MAX_PRODUCERS_PER_LINK: usize = 8;

/// The numbering of one receiving endpoint per (connection, producer), at the endpoint's level,
/// bounded in producers per connection ([`MAX_PRODUCERS_PER_LINK`], least recently heard from
/// forgotten first) so that a peer naming a new producer per copy holds at most that many
/// producers' holds; a forgotten producer's hold, and every hold of a connection that ended, is
/// released with its gaps, never dropped (PATTERNS §4).
#[derive(Debug)]
pub(crate) struct Reorderers<T> {
    level: Ordering,
    max_hold: usize,
    by: HashMap<(u64, Bytes), (Orderer<T>, u64)>,
    tick: u64,
}

impl<T> Default for Reorderers<T> {
    fn default() -> Self {
        Self::new(Ordering::None, 0)
    }
}

impl<T> Reorderers<T> {
    pub(crate) fn new(level: Ordering, max_hold: usize) -> Self {
        Self {
            level,
            max_hold,
            by: HashMap::new(),
            tick: 0,
        }
    }

    /// Takes one arrival on connection `link` from `producer`, numbered `seq`, and appends what
    /// may now be delivered to `out` (see [`Orderer::push`]).
    pub(crate) fn push(
        &mut self,
        link: u64,
        producer: Bytes,
        seq: Option<u64>,
        item: T,
        wanted: bool,
        out: &mut VecDeque<Release<T>>,
    ) {
        self.tick += 1;
        let key = (link, producer);
        if !self.by.contains_key(&key) {
            let of_link = self.by.iter().filter(|((l, _), _)| *l == link);
            if of_link.clone().count() >= MAX_PRODUCERS_PER_LINK {
                let oldest = of_link
                    .min_by_key(|(_, (_, last))| *last)
                    .map(|(k, _)| k.clone())
                    .expect("at the bound, so not empty");
                if let Some((mut o, _)) = self.by.remove(&oldest) {
                    o.flush(out);
                }
            }
            let o = Orderer::new(self.level, self.max_hold);
            self.by.insert(key.clone(), (o, self.tick));
        }
        let (o, last) = self.by.get_mut(&key).expect("inserted above");
        *last = self.tick;
        o.push(seq, item, wanted, out);
    }

    /// Connection `link` ended: its producers go, and what they held is released to `out`.
    pub(crate) fn end_link(&mut self, link: u64, out: &mut VecDeque<Release<T>>) {
        let gone: Vec<_> = self
            .by
            .keys()
            .filter(|(l, _)| *l == link)
            .cloned()
            .collect();
        for k in gone {
            if let Some((mut o, _)) = self.by.remove(&k) {
                o.flush(out);
            }
        }
    }

    /// Producers remembered now.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.by.len()
    }
}

/// The detect numbering of one receiving endpoint, per producer name, at most
/// [`MAX_PRODUCERS`]: a peer that names a new producer per message cannot grow it without
/// bound. Past the bound the producer heard from least recently is forgotten (most often one
/// whose connection ended: each connection is a new producer); one forgotten that speaks again
/// is counted from 1, so its next gap counts the numbers before it.
#[derive(Debug, Default)]
pub(crate) struct Detectors<K: Hash + Eq + Clone> {
    by: HashMap<K, (Orderer<()>, u64)>,
    tick: u64,
}

impl<K: Hash + Eq + Clone> Detectors<K> {
    /// The gap before `seq` from `producer`.
    pub(crate) fn gap(&mut self, producer: &K, seq: u64) -> u64 {
        self.tick += 1;
        let tick = self.tick;
        if let Some((o, last)) = self.by.get_mut(producer) {
            *last = tick;
            return o.detect(seq);
        }
        if self.by.len() >= MAX_PRODUCERS {
            let oldest = self
                .by
                .iter()
                .min_by_key(|(_, (_, last))| *last)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.by.remove(&k);
            }
        }
        let mut o = Orderer::new(Ordering::Detect, 0);
        let gap = o.detect(seq);
        self.by.insert(producer.clone(), (o, tick));
        gap
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detectors_count_per_producer_and_forget_the_least_recent_past_the_bound() {
        let mut d = Detectors::default();
        assert_eq!(d.gap(&0u32, 1), 0);
        assert_eq!(d.gap(&1u32, 3), 2);
        assert_eq!(d.gap(&0u32, 2), 0);
        assert_eq!(d.gap(&0u32, 5), 2);
        // A late number is gap 0, and does not move the count back.
        assert_eq!(d.gap(&0u32, 4), 0);
        assert_eq!(d.gap(&0u32, 6), 0);
        for p in 2..MAX_PRODUCERS as u32 + 1 {
            d.gap(&p, 1);
        }
        assert_eq!(d.by.len(), MAX_PRODUCERS);
        // Producer 1 was heard from least recently: forgotten, it counts from 1 again.
        assert!(!d.by.contains_key(&1));
        assert_eq!(d.gap(&0u32, 7), 0);
        assert_eq!(d.gap(&1u32, 4), 3);
    }

    fn run(level: Ordering, hold: usize, seqs: &[u64]) -> Vec<(u64, Option<u64>)> {
        let mut o = Orderer::new(level, hold);
        let mut out = VecDeque::new();
        for &s in seqs {
            o.push(Some(s), s, true, &mut out);
        }
        out.into_iter().map(|r| (r.item, r.gap)).collect()
    }

    #[test]
    fn none_delivers_in_arrival_order_without_gaps() {
        assert_eq!(run(Ordering::None, 8, &[3, 1]), vec![(3, None), (1, None)]);
    }

    #[test]
    fn detect_reports_the_missed_numbers_and_holds_nothing() {
        assert_eq!(
            run(Ordering::Detect, 8, &[1, 2, 5, 3, 6]),
            vec![
                (1, Some(0)),
                (2, Some(0)),
                (5, Some(2)),
                (3, Some(0)),
                (6, Some(0))
            ]
        );
    }

    #[test]
    fn detect_counts_drops_before_the_first_copy() {
        assert_eq!(run(Ordering::Detect, 8, &[4]), vec![(4, Some(3))]);
    }

    #[test]
    fn reassemble_reorders_within_the_hold() {
        assert_eq!(
            run(Ordering::Reassemble, 8, &[2, 3, 1, 4]),
            vec![(1, Some(0)), (2, Some(0)), (3, Some(0)), (4, Some(0))]
        );
    }

    #[test]
    fn a_full_hold_releases_the_oldest_with_the_gap_it_waited_for() {
        // 2 is lost: with a hold of 2, the third held copy releases 3 with gap 1.
        let mut o = Orderer::new(Ordering::Reassemble, 2);
        let mut out = VecDeque::new();
        for s in [1, 3, 4] {
            o.push(Some(s), s, true, &mut out);
        }
        assert_eq!(o.held(), 2);
        assert_eq!(out.len(), 1);
        o.push(Some(5), 5, true, &mut out);
        let got: Vec<_> = out.into_iter().map(|r| (r.item, r.gap)).collect();
        assert_eq!(
            got,
            vec![(1, Some(0)), (3, Some(1)), (4, Some(0)), (5, Some(0))]
        );
        assert_eq!(o.held(), 0);
    }

    #[test]
    fn a_repeat_is_delivered_not_suppressed() {
        assert_eq!(
            run(Ordering::Reassemble, 8, &[1, 2, 2]),
            vec![(1, Some(0)), (2, Some(0)), (2, Some(0))]
        );
        assert_eq!(
            run(Ordering::Detect, 8, &[1, 1]),
            vec![(1, Some(0)), (1, Some(0))]
        );
    }

    #[test]
    fn an_unwanted_copy_advances_the_numbering_without_a_false_gap() {
        let mut o = Orderer::new(Ordering::Detect, 0);
        let mut out = VecDeque::new();
        o.push(Some(1), 1, true, &mut out);
        o.push(Some(2), 2, false, &mut out);
        o.push(Some(3), 3, true, &mut out);
        let got: Vec<_> = out.into_iter().map(|r| (r.item, r.gap)).collect();
        assert_eq!(got, vec![(1, Some(0)), (3, Some(0))]);
    }

    #[test]
    fn a_flush_releases_every_held_copy_in_order_with_its_gap() {
        let mut o = Orderer::new(Ordering::Reassemble, 16);
        let mut out = VecDeque::new();
        for seq in [1, 3, 4, 7] {
            o.push(Some(seq), seq, true, &mut out);
        }
        assert_eq!(out.drain(..).map(|r| r.item).collect::<Vec<_>>(), vec![1]);
        assert_eq!(o.held(), 3);
        o.flush(&mut out);
        let got: Vec<_> = out.drain(..).map(|r| (r.item, r.gap)).collect();
        assert_eq!(got, vec![(3, Some(1)), (4, Some(0)), (7, Some(2))]);
        assert_eq!(o.held(), 0);
    }

    /// A peer that names a new producer for every copy, each with a gap so each would be held,
    /// holds at most MAX_PRODUCERS_PER_LINK producers on its connection: each one forgotten
    /// releases its copy, so nothing is lost and nothing grows.
    #[test]
    fn a_peer_naming_a_producer_per_copy_is_bounded_and_loses_nothing() {
        let mut r = Reorderers::new(Ordering::Reassemble, 256);
        let mut out = VecDeque::new();
        for i in 0..1000u64 {
            let name = Bytes::from(i.to_be_bytes().to_vec());
            r.push(7, name, Some(2), i, true, &mut out);
            assert!(r.len() <= MAX_PRODUCERS_PER_LINK, "{i}");
        }
        assert_eq!(out.len(), 1000 - MAX_PRODUCERS_PER_LINK);
        assert!(out.iter().all(|x| x.gap == Some(1)));
        // Another connection's producers are not evicted by this one's.
        r.push(8, Bytes::from_static(b"p"), Some(2), 5000, true, &mut out);
        assert_eq!(r.len(), MAX_PRODUCERS_PER_LINK + 1);
        // The connection ends: what its producers held is released.
        r.end_link(7, &mut out);
        assert_eq!(out.len(), 1000);
        assert_eq!(r.len(), 1);
        let mut items: Vec<_> = out.drain(..).map(|x| x.item).collect();
        items.sort_unstable();
        assert_eq!(items, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_hold_of_zero_behaves_as_detect() {
        assert_eq!(
            run(Ordering::Reassemble, 0, &[1, 3, 2]),
            vec![(1, Some(0)), (3, Some(1)), (2, Some(0))]
        );
    }
}
