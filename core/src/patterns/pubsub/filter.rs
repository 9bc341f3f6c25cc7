//! Pub/Sub topic filters (PATTERNS §4): segmented patterns, matched by a trie.
//!
//! A topic is one or more non-empty segments separated by `.`. A filter is the same, where a
//! segment may also be `*` (exactly one segment) or, as the last segment only, `#` (zero or
//! more segments). Everything else is literal: `sensors.temp` does not select
//! `sensors.temperature`, which a byte prefix would have.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

/// The longest topic or filter accepted, in bytes.
pub const MAX_LEN: usize = 1024;

/// Why a topic or filter was refused. Never widened into something that matches more.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {text:?}: {reason}")]
pub struct FilterError {
    /// "filter" or "topic".
    pub what: &'static str,
    /// The text as given.
    pub text: String,
    /// Why.
    pub reason: String,
}

/// One segment of a filter.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Segment {
    /// Exactly this segment.
    Literal(String),
    /// `*`: any one segment.
    Star,
    /// `#`: any number of segments, zero included (last segment only).
    Hash,
}

/// A parsed filter.
///
/// ```
/// use weida::filter::Filter;
/// let f: Filter = "sensors.*.temp".parse().unwrap();
/// assert!(f.matches("sensors.kitchen.temp"));
/// assert!(!f.matches("sensors.kitchen.hall.temp"));
/// let all: Filter = "sensors.#".parse().unwrap();
/// assert!(all.matches("sensors") && all.matches("sensors.a.b"));
/// assert!(!"sensors.temp".parse::<Filter>().unwrap().matches("sensors.temperature"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Filter {
    text: String,
    segments: Vec<Segment>,
}

fn split<'a>(what: &'static str, text: &'a str) -> Result<Vec<&'a str>, FilterError> {
    let bad = |reason: &str| FilterError {
        what,
        text: text.to_string(),
        reason: reason.to_string(),
    };
    if text.is_empty() {
        return Err(bad("empty"));
    }
    if text.len() > MAX_LEN {
        return Err(bad(&format!("longer than {MAX_LEN} bytes")));
    }
    if text.chars().any(|c| c.is_control()) {
        return Err(bad("contains a control character"));
    }
    let segments: Vec<&str> = text.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(bad("has an empty segment"));
    }
    Ok(segments)
}

/// Checks a topic: non-empty segments, no wildcard characters.
pub fn validate_topic(topic: &str) -> Result<(), FilterError> {
    for s in split("topic", topic)? {
        if s.contains(['*', '#']) {
            return Err(FilterError {
                what: "topic",
                text: topic.to_string(),
                reason: format!("segment {s:?} contains a wildcard; topics are literal"),
            });
        }
    }
    Ok(())
}

impl FromStr for Filter {
    type Err = FilterError;

    fn from_str(text: &str) -> Result<Self, FilterError> {
        let raw = split("filter", text)?;
        let last = raw.len() - 1;
        let mut segments = Vec::with_capacity(raw.len());
        for (i, s) in raw.iter().enumerate() {
            let bad = |reason: String| FilterError {
                what: "filter",
                text: text.to_string(),
                reason,
            };
            segments.push(match *s {
                "*" => Segment::Star,
                "#" if i == last => Segment::Hash,
                "#" => return Err(bad("`#` may only be the last segment".into())),
                s if s.contains(['*', '#']) => {
                    return Err(bad(format!(
                        "segment {s:?} mixes a wildcard with text; `*` and `#` are whole segments"
                    )))
                }
                s => Segment::Literal(s.to_string()),
            });
        }
        Ok(Self {
            text: text.to_string(),
            segments,
        })
    }
}

impl fmt::Display for Filter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Filter {
    /// The filter as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Its segments.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// Whether `topic` (a valid topic) is selected: the reference matcher, a direct reading of
    /// the grammar that the trie is tested against.
    pub fn matches(&self, topic: &str) -> bool {
        fn go(f: &[Segment], t: &[&str]) -> bool {
            match (f.first(), t.first()) {
                (None, None) => true,
                (Some(Segment::Hash), _) => true,
                (Some(Segment::Star), Some(_)) => go(&f[1..], &t[1..]),
                (Some(Segment::Literal(l)), Some(s)) => l == s && go(&f[1..], &t[1..]),
                _ => false,
            }
        }
        let t: Vec<&str> = topic.split('.').collect();
        go(&self.segments, &t)
    }
}

#[derive(Debug)]
struct Node<K> {
    literal: HashMap<String, Self>,
    star: Option<Box<Self>>,
    /// Keys whose filter ends here.
    end: Vec<K>,
    /// Keys whose filter ends here with `#`.
    hash: Vec<K>,
}

impl<K> Default for Node<K> {
    fn default() -> Self {
        Self {
            literal: HashMap::new(),
            star: None,
            end: Vec::new(),
            hash: Vec::new(),
        }
    }
}

impl<K> Node<K> {
    fn is_empty(&self) -> bool {
        self.literal.is_empty()
            && self.star.is_none()
            && self.end.is_empty()
            && self.hash.is_empty()
    }
}

/// Filters of many subscribers, matched against a topic in time proportional to the topic's
/// segments and the wildcards on its path, not to the number of filters.
#[derive(Debug)]
pub struct FilterSet<K> {
    root: Node<K>,
    len: usize,
}

impl<K> Default for FilterSet<K> {
    fn default() -> Self {
        Self {
            root: Node::default(),
            len: 0,
        }
    }
}

impl<K: Copy + Eq + Ord> FilterSet<K> {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many (filter, key) entries it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `filter` for `key`; the same pair twice is held twice (and needs two removes).
    pub fn insert(&mut self, filter: &Filter, key: K) {
        let mut node = &mut self.root;
        for s in &filter.segments {
            node = match s {
                Segment::Literal(l) => node.literal.entry(l.clone()).or_default(),
                Segment::Star => node.star.get_or_insert_with(Default::default),
                Segment::Hash => {
                    node.hash.push(key);
                    self.len += 1;
                    return;
                }
            };
        }
        node.end.push(key);
        self.len += 1;
    }

    /// Removes one `filter` entry of `key`; false if there was none.
    pub fn remove(&mut self, filter: &Filter, key: K) -> bool {
        fn go<K: Eq + Copy>(node: &mut Node<K>, f: &[Segment], key: K) -> bool {
            let take = |v: &mut Vec<K>| match v.iter().position(|k| *k == key) {
                Some(i) => {
                    v.swap_remove(i);
                    true
                }
                None => false,
            };
            match f.first() {
                None => take(&mut node.end),
                Some(Segment::Hash) => take(&mut node.hash),
                Some(Segment::Star) => {
                    let Some(child) = node.star.as_deref_mut() else {
                        return false;
                    };
                    let removed = go(child, &f[1..], key);
                    if child.is_empty() {
                        node.star = None;
                    }
                    removed
                }
                Some(Segment::Literal(l)) => {
                    let Some(child) = node.literal.get_mut(l) else {
                        return false;
                    };
                    let removed = go(child, &f[1..], key);
                    if child.is_empty() {
                        node.literal.remove(l);
                    }
                    removed
                }
            }
        }
        let removed = go(&mut self.root, &filter.segments, key);
        if removed {
            self.len -= 1;
        }
        removed
    }

    /// Removes every entry of `key` (a subscriber that went away).
    pub fn remove_key(&mut self, key: K) {
        fn go<K: Eq + Copy>(node: &mut Node<K>, key: K) -> usize {
            let before = node.end.len() + node.hash.len();
            node.end.retain(|k| *k != key);
            node.hash.retain(|k| *k != key);
            let mut n = before - node.end.len() - node.hash.len();
            node.literal.retain(|_, c| {
                n += go(c, key);
                !c.is_empty()
            });
            if let Some(c) = node.star.as_deref_mut() {
                n += go(c, key);
                if c.is_empty() {
                    node.star = None;
                }
            }
            n
        }
        self.len -= go(&mut self.root, key);
    }

    /// Whether any filter selects `topic`: [`FilterSet::matches`] without collecting keys, and
    /// without allocating (a subscriber asks this once per copy).
    pub fn selects(&self, topic: &str) -> bool {
        fn go<K>(node: &Node<K>, rest: Option<&str>) -> bool {
            if !node.hash.is_empty() {
                return true;
            }
            let Some(rest) = rest else {
                return !node.end.is_empty();
            };
            let (segment, tail) = match rest.split_once('.') {
                Some((s, t)) => (s, Some(t)),
                None => (rest, None),
            };
            node.literal.get(segment).is_some_and(|c| go(c, tail))
                || node.star.as_deref().is_some_and(|c| go(c, tail))
        }
        go(&self.root, Some(topic))
    }

    /// The keys whose filters select `topic`, each once, sorted, into `out` (cleared first).
    pub fn matches(&self, topic: &str, out: &mut Vec<K>) {
        fn go<K: Copy>(node: &Node<K>, t: &[&str], out: &mut Vec<K>) {
            out.extend_from_slice(&node.hash);
            match t.split_first() {
                None => out.extend_from_slice(&node.end),
                Some((s, rest)) => {
                    if let Some(c) = node.literal.get(*s) {
                        go(c, rest, out);
                    }
                    if let Some(c) = node.star.as_deref() {
                        go(c, rest, out);
                    }
                }
            }
        }
        out.clear();
        let mut segments: [&str; 16] = [""; 16];
        let mut n = 0;
        let mut long = Vec::new();
        for s in topic.split('.') {
            if n < segments.len() {
                segments[n] = s;
            } else {
                if long.is_empty() {
                    long.extend_from_slice(&segments);
                }
                long.push(s);
            }
            n += 1;
        }
        let t: &[&str] = if long.is_empty() {
            &segments[..n]
        } else {
            &long
        };
        go(&self.root, t, out);
        if out.len() > 1 {
            out.sort_unstable();
            out.dedup();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_grammar_selects_what_it_says() {
        #[rustfmt::skip]
        let table: &[(&str, &str, bool)] = &[
            ("sensors.*.temp", "sensors.kitchen.temp", true),
            ("sensors.*.temp", "sensors.temp", false),
            ("sensors.*.temp", "sensors.a.b.temp", false),
            ("sensors.#", "sensors", true),
            ("sensors.#", "sensors.a", true),
            ("sensors.#", "sensors.a.b.c", true),
            ("sensors.#", "sensorsx", false),
            ("sensors.temp", "sensors.temperature", false),
            ("sensors.temp", "sensors.temp", true),
            ("#", "anything.at.all", true),
            ("*", "one", true),
            ("*", "one.two", false),
            ("*.#", "one", true),
            ("a.*.#", "a", false),
            ("a.*.#", "a.b", true),
            ("a.*.#", "a.b.c.d", true),
        ];
        for &(f, t, want) in table {
            let filter: Filter = f.parse().unwrap();
            assert_eq!(filter.matches(t), want, "{f} vs {t}");
            let mut set = FilterSet::new();
            set.insert(&filter, 1u32);
            let mut out = Vec::new();
            set.matches(t, &mut out);
            assert_eq!(!out.is_empty(), want, "trie: {f} vs {t}");
        }
    }

    #[test]
    fn malformed_filters_and_topics_are_refused_never_widened() {
        for bad in ["", "a..b", ".a", "a.", "a.#.b", "a*", "a.b#", "#a", "a.*x"] {
            assert!(bad.parse::<Filter>().is_err(), "{bad:?}");
        }
        for bad in ["", "a..b", "a.*", "a.#", "x*"] {
            assert!(validate_topic(bad).is_err(), "{bad:?}");
        }
        assert!(validate_topic("a.b.c").is_ok());
        assert!(format!("{}", "a.#.b".parse::<Filter>().unwrap_err()).contains("last segment"));
    }

    #[test]
    fn a_subscriber_matching_twice_is_listed_once_and_removal_is_exact() {
        let mut set = FilterSet::new();
        let a: Filter = "x.#".parse().unwrap();
        let b: Filter = "x.*".parse().unwrap();
        set.insert(&a, 7u32);
        set.insert(&b, 7);
        set.insert(&b, 8);
        let mut out = Vec::new();
        set.matches("x.y", &mut out);
        assert_eq!(out, vec![7, 8]);
        assert!(set.remove(&b, 7));
        assert!(!set.remove(&b, 7));
        set.matches("x.y", &mut out);
        assert_eq!(out, vec![7, 8]);
        set.remove_key(7);
        set.matches("x.y", &mut out);
        assert_eq!(out, vec![8]);
        assert_eq!(set.len(), 1);
        set.remove_key(8);
        assert!(set.is_empty() && set.root.is_empty());
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just("cc".to_string())
        ]
    }

    fn topic() -> impl Strategy<Value = String> {
        prop::collection::vec(segment(), 1..6).prop_map(|v| v.join("."))
    }

    fn filter() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(prop_oneof![segment(), Just("*".to_string())], 0..5),
            any::<bool>(),
        )
            .prop_filter_map("non-empty", |(mut v, hash)| {
                if hash {
                    v.push("#".into());
                }
                (!v.is_empty()).then(|| v.join("."))
            })
    }

    proptest! {
        #[test]
        fn the_trie_agrees_with_the_reference_matcher(
            filters in prop::collection::vec(filter(), 0..40),
            topics in prop::collection::vec(topic(), 1..20),
        ) {
            let parsed: Vec<Filter> = filters.iter().map(|f| f.parse().unwrap()).collect();
            let mut set = FilterSet::new();
            for (i, f) in parsed.iter().enumerate() {
                set.insert(f, i);
            }
            let mut out = Vec::new();
            for t in &topics {
                set.matches(t, &mut out);
                let want: Vec<usize> = parsed.iter().enumerate().filter(|(_, f)| f.matches(t)).map(|(i, _)| i).collect();
                prop_assert_eq!(&out, &want, "topic {}", t);
                prop_assert_eq!(set.selects(t), !want.is_empty(), "topic {}", t);
            }
        }

        #[test]
        fn arbitrary_text_never_panics(s in ".{0,64}") {
            let _ = s.parse::<Filter>();
            let _ = validate_topic(&s);
        }
    }
}
