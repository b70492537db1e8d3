//! `--shard I/N`: which questions a shard of a sweep runs.
//!
//! A question belongs to shard `(h mod N) + 1`, where `h` is the first 8 bytes of the SHA-256
//! of its id read as a big-endian integer. The id alone decides, so a question stays in its
//! shard whatever else the question sets hold, on every machine and every version.

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Shard `index` of `count`, counted from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// The shard (1 to `count`) of question `id`.
pub fn shard_of(id: &str, count: u32) -> u32 {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(id.as_bytes());
    let mut head = [0u8; 8];
    head.copy_from_slice(&hash[..8]);
    (u64::from_be_bytes(head) % u64::from(count)) as u32 + 1
}

impl Shard {
    /// Whether question `id` is in this shard.
    pub fn contains(&self, id: &str) -> bool {
        shard_of(id, self.count) == self.index
    }

    /// The folder of the response cache this shard keeps its files in, under the cache
    /// folder (`shard-2-of-4`), so shards on one machine never share a cache file.
    pub fn folder(&self) -> String {
        format!("shard-{}-of-{}", self.index, self.count)
    }

    /// The shard whose cache folder is named `name`, when it is one.
    pub fn from_folder(name: &str) -> Option<Shard> {
        let (i, n) = name.strip_prefix("shard-")?.split_once("-of-")?;
        let shard: Shard = format!("{i}/{n}").parse().ok()?;
        (shard.folder() == name).then_some(shard)
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("`{s}` is not `I/N` (write e.g. `1/4`)"))?;
        let parse = |t: &str| t.trim().parse::<u32>();
        let (Ok(index), Ok(count)) = (parse(i), parse(n)) else {
            return Err(format!(
                "`{s}` is not `I/N` with whole numbers (write e.g. `1/4`)"
            ));
        };
        if count == 0 || index == 0 || index > count {
            return Err(format!(
                "`{s}` names no shard: I runs from 1 to N, and N is at least 1"
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shard_reads_back_from_its_cache_folder_and_nothing_else_does() {
        let shard = Shard { index: 2, count: 4 };
        assert_eq!(shard.folder(), "shard-2-of-4");
        assert_eq!(Shard::from_folder("shard-2-of-4"), Some(shard));
        for other in [
            "shard-5-of-4",
            "shard-02-of-4",
            "shard-2-of-4x",
            "batch",
            "shard-2/4",
        ] {
            assert_eq!(Shard::from_folder(other), None, "{other}");
        }
    }

    #[test]
    fn specs_parse_or_name_the_problem() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, count: 3 }));
        assert_eq!("1/1".parse::<Shard>().unwrap().to_string(), "1/1");
        for bad in ["3/2", "0/2", "1/0"] {
            assert_eq!(
                bad.parse::<Shard>(),
                Err(format!(
                    "`{bad}` names no shard: I runs from 1 to N, and N is at least 1"
                ))
            );
        }
        assert_eq!(
            "a/b".parse::<Shard>(),
            Err("`a/b` is not `I/N` with whole numbers (write e.g. `1/4`)".into())
        );
        assert_eq!(
            "2".parse::<Shard>(),
            Err("`2` is not `I/N` (write e.g. `1/4`)".into())
        );
    }

    #[test]
    fn the_hash_is_stable_and_splits_every_question_once() {
        // Fixed values: changing the hash would move questions between shards of old runs.
        assert_eq!(shard_of("fee-per-term", 2), 1);
        assert_eq!(shard_of("fee-per-term", 7), 2);
        assert_eq!(shard_of("scholarship", 2), 1);
        let ids: Vec<String> = (0..1000).map(|i| format!("q{i}")).collect();
        let shards: Vec<Shard> = (1..=4).map(|index| Shard { index, count: 4 }).collect();
        for id in &ids {
            assert_eq!(shards.iter().filter(|s| s.contains(id)).count(), 1, "{id}");
        }
        let first = ids.iter().filter(|id| shards[0].contains(id)).count();
        assert!((200..300).contains(&first), "roughly a quarter: {first}");
    }
}
