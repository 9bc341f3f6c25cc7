//! Pub/Sub filter matching: nanoseconds per topic against 10 000 filters, the trie beside a
//! linear scan of the same filters (the reference matcher), in the same run.

use std::time::Instant;

use weida::filter::{Filter, FilterSet};

const FILTERS: usize = 10_000;
const TOPICS: usize = 2_000;

/// A deterministic spread of filters: literal, `*` and `#` at several depths.
fn corpus() -> (Vec<Filter>, Vec<String>) {
    let mut filters = Vec::with_capacity(FILTERS);
    for i in 0..FILTERS {
        let (a, b, c) = (i % 50, (i / 50) % 40, i % 7);
        let text = match i % 5 {
            0 => format!("site{a}.room{b}.sensor{c}"),
            1 => format!("site{a}.*.sensor{c}"),
            2 => format!("site{a}.room{b}.#"),
            3 => format!("site{a}.room{b}.sensor{c}.reading"),
            _ => format!("*.room{b}.sensor{c}"),
        };
        filters.push(text.parse().expect("valid filter"));
    }
    let topics = (0..TOPICS)
        .map(|i| format!("site{}.room{}.sensor{}", i % 60, (i * 7) % 45, i % 9))
        .collect();
    (filters, topics)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// The markdown table.
pub(crate) fn table(reps: usize) -> String {
    let (filters, topics) = corpus();
    let mut set = FilterSet::new();
    for (i, f) in filters.iter().enumerate() {
        set.insert(f, i as u32);
    }
    let mut out = Vec::new();
    let mut matched = 0usize;
    let (mut trie, mut scan) = (Vec::new(), Vec::new());
    for _ in 0..reps {
        let t = Instant::now();
        for topic in &topics {
            set.matches(topic, &mut out);
            matched += out.len();
        }
        trie.push(t.elapsed().as_nanos() as f64 / TOPICS as f64);
        let t = Instant::now();
        for topic in topics.iter().take(TOPICS / 10) {
            matched += filters.iter().filter(|f| f.matches(topic)).count();
        }
        scan.push(t.elapsed().as_nanos() as f64 / (TOPICS / 10) as f64);
    }
    let (trie, scan) = (median(trie), median(scan));
    format!(
        "\n## Filter matching: {FILTERS} filters, {TOPICS} topics (median of {reps})\n\n\
         | matcher | ns / topic | linear / trie |\n|---|---:|---:|\n\
         | trie (`FilterSet::matches`) | {trie:.0} | {:.0} |\n\
         | linear scan (`Filter::matches` on each) | {scan:.0} | |\n\n\
         ({matched} matches counted, so neither loop is optimized away.)\n",
        scan / trie
    )
}
