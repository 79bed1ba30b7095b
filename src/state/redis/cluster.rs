//! What Redis Cluster says, read: which of the 16384 hash slots a key is
//! in (CRC16 of the key, or of its `{hash tag}`), the `MOVED` and `ASK`
//! redirections a node answers for a slot it does not serve, and the slot
//! map of `CLUSTER SLOTS`. Pure functions and data: the routing that uses
//! them is `route`'s.

use std::fmt;

use super::resp::Reply;

/// The number of hash slots.
pub(super) const SLOTS: u16 = 16384;

/// A node: where a redirection or the slot map says to go. An empty host
/// (a node that does not know its own address) means the host the answer
/// came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(in crate::state::redis) struct Node {
    pub(in crate::state::redis) host: String,
    pub(in crate::state::redis) port: u16,
}

impl Node {
    /// The node as `answered_by` names it: its own host when it gave none.
    pub(super) fn seen_from(self, answered_by: &Node) -> Node {
        if self.host.is_empty() {
            Node {
                host: answered_by.host.clone(),
                port: self.port,
            }
        } else {
            self
        }
    }
}

impl fmt::Display for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// The hash slot of `key`: CRC16 (XMODEM) of the key, modulo 16384; when
/// the key has a `{...}` with something inside, of that only (the first
/// `{` and the first `}` after it), so that keys sharing a tag share a
/// slot.
pub(super) fn slot(key: &[u8]) -> u16 {
    let hashed = match key.iter().position(|&b| b == b'{') {
        Some(open) => match key[open + 1..].iter().position(|&b| b == b'}') {
            Some(len) if len > 0 => &key[open + 1..open + 1 + len],
            _ => key,
        },
        None => key,
    };
    crc16(hashed) % SLOTS
}

/// CRC16-CCITT as Redis Cluster uses it: polynomial 0x1021, initial value
/// 0, no reflection.
fn crc16(bytes: &[u8]) -> u16 {
    let mut crc: u16 = 0;
    for &byte in bytes {
        crc ^= u16::from(byte) << 8;
        for _ in 0..8 {
            crc = if crc & 0x8000 != 0 {
                (crc << 1) ^ 0x1021
            } else {
                crc << 1
            };
        }
    }
    crc
}

/// A node's answer that the key is served elsewhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Redirect {
    /// `MOVED SLOT HOST:PORT`: the slot is served there, from now on.
    Moved(u16, Node),
    /// `ASK SLOT HOST:PORT`: the slot is being migrated there, and this key
    /// is there already: ask once, preceded by `ASKING`.
    Ask(u16, Node),
}

impl Redirect {
    /// The redirection an error reply's text is, if it is one.
    pub(super) fn parse(error: &str) -> Option<Redirect> {
        let mut words = error.split_ascii_whitespace();
        let kind = words.next()?;
        let slot: u16 = words.next()?.parse().ok().filter(|s| *s < SLOTS)?;
        let node = node(words.next()?)?;
        if words.next().is_some() {
            return None;
        }
        match kind {
            "MOVED" => Some(Redirect::Moved(slot, node)),
            "ASK" => Some(Redirect::Ask(slot, node)),
            _ => None,
        }
    }
}

/// `HOST:PORT` (an IPv6 host bare, as Redis writes it, or in brackets).
fn node(text: &str) -> Option<Node> {
    let (host, port) = text.rsplit_once(':')?;
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some(Node {
        host: host.to_string(),
        port: port.parse().ok()?,
    })
}

/// Which node serves which slots: `CLUSTER SLOTS`, and what `MOVED`
/// answers said since.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct SlotMap {
    /// First slot, last slot, the master serving them.
    ranges: Vec<(u16, u16, Node)>,
    /// Single slots a `MOVED` placed elsewhere since (a few at most: one
    /// store updates one key).
    moved: Vec<(u16, Node)>,
}

/// The most `MOVED` answers remembered on top of the map.
const MOST_MOVED: usize = 16;

impl SlotMap {
    /// The master serving `slot`, if known.
    pub(super) fn owner(&self, slot: u16) -> Option<&Node> {
        if let Some((_, node)) = self.moved.iter().rev().find(|(s, _)| *s == slot) {
            return Some(node);
        }
        self.ranges
            .iter()
            .find(|(first, last, _)| (*first..=*last).contains(&slot))
            .map(|(_, _, node)| node)
    }

    /// A `MOVED` answer: `slot` is served by `node` now.
    pub(super) fn moved(&mut self, slot: u16, node: Node) {
        self.moved.retain(|(s, _)| *s != slot);
        if self.moved.len() == MOST_MOVED {
            self.moved.remove(0);
        }
        self.moved.push((slot, node));
    }

    /// The map in a `CLUSTER SLOTS` reply `answered_by` gave: for each
    /// range, its first and last slot and its master (replicas after it
    /// are of no use here). Anything else is an error saying what.
    pub(super) fn from_cluster_slots(reply: Reply, answered_by: &Node) -> Result<SlotMap, String> {
        let Reply::Array(Some(ranges)) = reply else {
            return Err(format!("CLUSTER SLOTS answered {}", shape(&reply)));
        };
        let mut map = SlotMap::default();
        for range in ranges {
            let Reply::Array(Some(items)) = range else {
                return Err(format!("a CLUSTER SLOTS range is {}", shape(&range)));
            };
            let (Some(Reply::Int(first)), Some(Reply::Int(last)), Some(Reply::Array(Some(master)))) =
                (items.first(), items.get(1), items.get(2))
            else {
                return Err(
                    "a CLUSTER SLOTS range is not [first, last, [host, port, ...], ...]".into(),
                );
            };
            let in_range = |n: i64| (0..i64::from(SLOTS)).contains(&n);
            if !in_range(*first) || !in_range(*last) || first > last {
                return Err(format!("CLUSTER SLOTS names slots {first}-{last}"));
            }
            let (Some(Reply::Bulk(Some(host))), Some(Reply::Int(port))) =
                (master.first(), master.get(1))
            else {
                return Err("a CLUSTER SLOTS master is not [host, port, ...]".into());
            };
            let port =
                u16::try_from(*port).map_err(|_| format!("CLUSTER SLOTS names port {port}"))?;
            let host = String::from_utf8_lossy(host);
            // "?" is a node whose address is not known: asked where we were.
            let host = if host == "?" {
                String::new()
            } else {
                host.into_owned()
            };
            let node = Node { host, port }.seen_from(answered_by);
            map.ranges.push((*first as u16, *last as u16, node));
        }
        Ok(map)
    }
}

/// What kind of reply it was, for messages.
fn shape(reply: &Reply) -> &'static str {
    match reply {
        Reply::Error(_) => "an error",
        Reply::Array(Some(_)) => "an array",
        Reply::Array(None) | Reply::Bulk(None) => "nil",
        _ => "a single value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(host: &str, port: u16) -> Node {
        Node {
            host: host.into(),
            port,
        }
    }

    /// The answers of `CLUSTER KEYSLOT` (Redis 7.0.15) for the same keys.
    #[test]
    fn slots_are_those_the_server_computes() {
        for (key, expected) in [
            ("foo", 12182),
            ("bar", 5061),
            ("123456789", 12739),
            ("{user1000}.following", 3443),
            ("{user1000}.followers", 3443),
            ("foo{}{bar}", 8363),
            ("foo{{bar}}zap", 4015),
            ("foo{bar}{zap}", 5061),
            ("{}", 15257),
            ("", 0),
            ("a{b", 13340),
            ("}{x}", 16287),
            ("retry:circuit:payments-api", 258),
            ("retry:budget:payments-api", 15239),
        ] {
            assert_eq!(slot(key.as_bytes()), expected, "{key}");
        }
        // The CRC's own check value.
        assert_eq!(crc16(b"123456789"), 0x31C3);
    }

    #[test]
    fn redirections_are_read() {
        assert_eq!(
            Redirect::parse("MOVED 3999 127.0.0.1:6381"),
            Some(Redirect::Moved(3999, at("127.0.0.1", 6381)))
        );
        assert_eq!(
            Redirect::parse("ASK 16383 redis-2.internal:7000"),
            Some(Redirect::Ask(16383, at("redis-2.internal", 7000)))
        );
        assert_eq!(
            Redirect::parse("MOVED 1 ::1:7001"),
            Some(Redirect::Moved(1, at("::1", 7001)))
        );
        assert_eq!(
            Redirect::parse("MOVED 1 [::1]:7001"),
            Some(Redirect::Moved(1, at("::1", 7001)))
        );
        // An unknown endpoint: the same host as the node that answered.
        let empty = Redirect::parse("MOVED 7 :7002").unwrap();
        let Redirect::Moved(_, node) = empty else {
            panic!()
        };
        assert_eq!(node.seen_from(&at("10.1.1.1", 7000)), at("10.1.1.1", 7002));
        for not in [
            "ERR unknown command",
            "MOVED",
            "MOVED 16384 h:1",
            "MOVED x h:1",
            "MOVED 1 h",
            "MOVED 1 h:99999",
            "MOVED 1 h:1 extra",
            "READONLY You can't write against a read only replica.",
            "moved 1 h:1",
        ] {
            assert_eq!(Redirect::parse(not), None, "{not}");
        }
    }

    fn bulk(text: &str) -> Reply {
        Reply::Bulk(Some(text.as_bytes().to_vec()))
    }

    fn range(first: i64, last: i64, host: &str, port: i64) -> Reply {
        Reply::Array(Some(vec![
            Reply::Int(first),
            Reply::Int(last),
            Reply::Array(Some(vec![
                bulk(host),
                Reply::Int(port),
                bulk("e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"),
                Reply::Array(Some(vec![bulk("hostname"), bulk("node-1")])),
            ])),
            // A replica: not used.
            Reply::Array(Some(vec![bulk("127.0.0.1"), Reply::Int(7100)])),
        ]))
    }

    #[test]
    fn the_slot_map_is_read_from_cluster_slots() {
        let seed = at("seed.example", 7000);
        let reply = Reply::Array(Some(vec![
            range(0, 5460, "127.0.0.1", 7000),
            range(5461, 10922, "", 7001),
            range(10923, 16383, "?", 7002),
        ]));
        let mut map = SlotMap::from_cluster_slots(reply, &seed).unwrap();
        assert_eq!(map.owner(0), Some(&at("127.0.0.1", 7000)));
        assert_eq!(map.owner(5460), Some(&at("127.0.0.1", 7000)));
        assert_eq!(map.owner(5461), Some(&at("seed.example", 7001)));
        assert_eq!(map.owner(16383), Some(&at("seed.example", 7002)));
        // MOVED answers win over the map, the latest first.
        map.moved(3, at("127.0.0.1", 7002));
        map.moved(3, at("127.0.0.1", 7001));
        assert_eq!(map.owner(3), Some(&at("127.0.0.1", 7001)));
        assert_eq!(map.owner(4), Some(&at("127.0.0.1", 7000)));
        for n in 0..100 {
            map.moved(n, at("h", 1));
        }
        assert!(map.moved.len() <= MOST_MOVED);
        // A map with holes: a slot nobody serves has no owner.
        let holes =
            SlotMap::from_cluster_slots(Reply::Array(Some(vec![range(0, 10, "h", 1)])), &seed)
                .unwrap();
        assert_eq!(holes.owner(11), None);
    }

    #[test]
    fn a_malformed_cluster_slots_reply_is_an_error() {
        let seed = at("h", 1);
        for reply in [
            Reply::Error("ERR This instance has cluster support disabled".into()),
            Reply::Bulk(None),
            Reply::Array(Some(vec![Reply::Int(1)])),
            Reply::Array(Some(vec![Reply::Array(Some(vec![Reply::Int(0)]))])),
            Reply::Array(Some(vec![range(10, 5, "h", 1)])),
            Reply::Array(Some(vec![range(0, 16384, "h", 1)])),
            Reply::Array(Some(vec![range(-1, 5, "h", 1)])),
            Reply::Array(Some(vec![range(0, 5, "h", 70000)])),
            Reply::Array(Some(vec![Reply::Array(Some(vec![
                Reply::Int(0),
                Reply::Int(1),
                Reply::Array(Some(vec![Reply::Int(1), Reply::Int(2)])),
            ]))])),
        ] {
            let why = SlotMap::from_cluster_slots(reply, &seed).unwrap_err();
            assert!(why.contains("CLUSTER SLOTS"), "{why}");
        }
    }
}
