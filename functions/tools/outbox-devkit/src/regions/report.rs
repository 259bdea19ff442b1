//! The run's counts, per phase: per region, in total, and what must be zero.

use super::tally::Tally;
use super::workload::Committed;
use std::fmt::Write as _;

/// One phase's messages and where they were delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseCount {
    /// What the phase did.
    pub name: String,
    /// Messages committed.
    pub committed: usize,
    /// Copies delivered per region, in the order of the stack's regions.
    pub by_region: Vec<(String, usize)>,
    /// Copies delivered in all.
    pub total: usize,
    /// Messages delivered more than once.
    pub twice: usize,
    /// Committed messages never delivered.
    pub missing: usize,
    /// Messages delivered by a region that was not to publish them.
    pub wrong_region: usize,
    /// Deliveries of messages this phase did not commit, or whose copies carried
    /// different message ids.
    pub stray: usize,
    /// Further lines: what the failover and failback moved, and why.
    pub notes: Vec<String>,
}

impl PhaseCount {
    /// Counts `tally` against `committed`; `publisher` names the region that must have
    /// published a message (`None`: either).
    pub fn of(
        name: &str,
        regions: &[String],
        committed: &[Committed],
        tally: &Tally,
        publisher: impl Fn(&Committed) -> Option<String>,
    ) -> Self {
        let mut count = PhaseCount {
            name: name.to_owned(),
            committed: committed.len(),
            by_region: regions
                .iter()
                .map(|r| (r.clone(), tally.count_in(r)))
                .collect(),
            total: tally.total(),
            twice: tally.twice(),
            missing: 0,
            wrong_region: 0,
            stray: tally.inconsistent_ids(),
            notes: Vec::new(),
        };
        for message in committed {
            match (tally.regions.get(&message.name), publisher(message)) {
                (None, _) => count.missing += 1,
                (Some(by), Some(want)) if by.iter().any(|r| *r != want) => count.wrong_region += 1,
                _ => {}
            }
        }
        let names: std::collections::HashSet<&str> =
            committed.iter().map(|c| c.name.as_str()).collect();
        count.stray += tally
            .regions
            .keys()
            .filter(|n| !names.contains(n.as_str()))
            .count();
        count
    }

    /// Every message delivered once, by the region that was to publish it.
    pub fn held(&self) -> bool {
        self.twice == 0 && self.missing == 0 && self.wrong_region == 0 && self.stray == 0
    }

    fn render(&self, out: &mut String) {
        let _ = writeln!(out, "{} ({} committed):", self.name, self.committed);
        for (region, n) in &self.by_region {
            let _ = writeln!(out, "  published by {region:<12} {n:>6}");
        }
        let _ = writeln!(out, "  total                     {:>6}", self.total);
        let _ = writeln!(out, "  published twice: {}", self.twice);
        if self.missing + self.wrong_region + self.stray > 0 {
            let _ = writeln!(
                out,
                "  BROKEN: {} never published, {} by the wrong region, {} stray",
                self.missing, self.wrong_region, self.stray
            );
        }
        for note in &self.notes {
            let _ = writeln!(out, "  {note}");
        }
    }
}

/// The whole run.
#[derive(Debug, Clone, Default)]
pub struct RegionsReport {
    /// The phases in order: both regions up, failover, failback.
    pub phases: Vec<PhaseCount>,
}

impl RegionsReport {
    /// Whether every phase held.
    pub fn held(&self) -> bool {
        self.phases.iter().all(PhaseCount::held)
    }

    /// Published twice in all phases.
    pub fn twice(&self) -> usize {
        self.phases.iter().map(|p| p.twice).sum()
    }

    /// The report as printed.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for phase in &self.phases {
            phase.render(&mut out);
        }
        let _ = writeln!(
            out,
            "published twice: {} ({})",
            self.twice(),
            if self.held() {
                "every message published once"
            } else {
                "BROKEN"
            }
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions() -> Vec<String> {
        vec!["us-east-1".into(), "eu-west-1".into()]
    }

    fn committed(name: &str, home: &str) -> Committed {
        Committed {
            name: name.into(),
            home: home.into(),
        }
    }

    fn delivered(tally: &mut Tally, name: &str, region: &str, id: &str) {
        tally
            .regions
            .entry(name.into())
            .or_default()
            .push(region.into());
        tally.ids.entry(name.into()).or_default().insert(id.into());
    }

    #[test]
    fn each_message_once_by_its_home_holds() {
        let all = [committed("a", "us-east-1"), committed("b", "eu-west-1")];
        let mut tally = Tally::default();
        delivered(&mut tally, "a", "us-east-1", "1");
        delivered(&mut tally, "b", "eu-west-1", "2");
        let count = PhaseCount::of("up", &regions(), &all, &tally, |c| Some(c.home.clone()));
        assert!(count.held(), "{count:?}");
        assert_eq!(
            count.by_region,
            vec![("us-east-1".into(), 1), ("eu-west-1".into(), 1)]
        );
    }

    #[test]
    fn a_copy_from_each_region_is_published_twice_and_one_wrong_region() {
        let all = [committed("a", "us-east-1")];
        let mut tally = Tally::default();
        delivered(&mut tally, "a", "us-east-1", "1");
        delivered(&mut tally, "a", "eu-west-1", "1");
        let count = PhaseCount::of("up", &regions(), &all, &tally, |c| Some(c.home.clone()));
        assert_eq!((count.twice, count.wrong_region, count.total), (1, 1, 2));
        assert!(!count.held());
        assert!(count.render_to_string().contains("published twice: 1"));
    }

    #[test]
    fn a_message_never_delivered_or_not_committed_breaks_the_phase() {
        let all = [committed("a", "us-east-1")];
        let mut tally = Tally::default();
        delivered(&mut tally, "z", "us-east-1", "9");
        let count = PhaseCount::of("up", &regions(), &all, &tally, |_| None);
        assert_eq!((count.missing, count.stray), (1, 1));
        assert!(!count.held());
    }

    #[test]
    fn copies_with_different_ids_are_stray() {
        let all = [committed("a", "us-east-1")];
        let mut tally = Tally::default();
        delivered(&mut tally, "a", "us-east-1", "1");
        delivered(&mut tally, "a", "us-east-1", "2");
        let count = PhaseCount::of("up", &regions(), &all, &tally, |_| None);
        assert_eq!((count.twice, count.stray), (1, 1));
    }

    impl PhaseCount {
        fn render_to_string(&self) -> String {
            let mut out = String::new();
            self.render(&mut out);
            out
        }
    }
}
