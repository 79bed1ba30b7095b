//! What a state URL names: one server, the seed nodes of a Redis Cluster,
//! or the sentinels that know where a replicated deployment's master is.
//!
//! - `redis://[USER:PASSWORD@]HOST[:PORT][/DB]` and every other form `url`
//!   reads: one server. A node of a Redis Cluster will do (its `MOVED`
//!   answers are followed).
//! - `redis://[USER:PASSWORD@]HOST:PORT,HOST:PORT[,...][/DB]` (also
//!   `rediss://`, `valkey://`, `valkeys://`): several hosts are seed nodes
//!   of one Redis Cluster, as redis-url-plus and others write them; every
//!   one gets the same credentials, TLS and database.
//! - `redis+sentinel://[USER:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]`
//!   (`rediss+sentinel://`, or `?tls=true`, for TLS to the sentinels and
//!   the master; `valkey+sentinel://`, `valkeys+sentinel://` too): Sentinel
//!   discovery, as redis-py's and Jedis's URL helpers spell it. Discovery
//!   listen on 26379 unless a port is given. The user and password are the
//!   master's; the sentinels get `?sentinel_username=` and
//!   `?sentinel_password=` (none unless given).

use super::cluster::Node;
use super::url::{self, Addr, RedisUrl};

/// Where the state is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// One server.
    Server(RedisUrl),
    /// The seed nodes of a Redis Cluster.
    Cluster(Vec<RedisUrl>),
    /// The sentinels, and the master they are asked for.
    Sentinel(Discovery),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Discovery {
    /// Each sentinel, with the credentials for sentinels.
    pub(crate) sentinels: Vec<RedisUrl>,
    /// The master's name, as the sentinels know it.
    pub(crate) master: String,
    /// The master's credentials, database and TLS; its address is a
    /// stand-in until the sentinels name it (see [`at`]).
    pub(crate) data: RedisUrl,
}

/// Sentinel's own port.
const SENTINEL_PORT: u16 = 26379;
/// The most hosts one URL may list.
const MOST_HOSTS: usize = 32;
const SENTINEL_FORM: &str = "redis+sentinel://HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]";

impl Target {
    /// TLS (`rediss://`, `rediss+sentinel://`, `?tls=true`): a `--state-ca`
    /// means something.
    pub(crate) fn uses_tls(&self) -> bool {
        match self {
            Target::Server(url) => url.uses_tls(),
            Target::Cluster(seeds) => seeds.iter().any(RedisUrl::uses_tls),
            Target::Sentinel(sentinels) => sentinels.data.uses_tls(),
        }
    }
}

/// `url` with its server replaced by `node` (TLS kept; a Unix socket's URL
/// goes over TCP there).
pub(super) fn at(url: &RedisUrl, node: &Node) -> RedisUrl {
    let (host, port) = (node.host.clone(), node.port);
    let addr = match &url.addr {
        Addr::Tls { insecure, .. } => Addr::Tls {
            host,
            port,
            insecure: *insecure,
        },
        _ => Addr::Tcp { host, port },
    };
    RedisUrl {
        addr,
        ..url.clone()
    }
}

/// The node `url` names (a Unix socket: this host).
pub(super) fn node(url: &RedisUrl) -> Node {
    match &url.addr {
        Addr::Tcp { host, port } | Addr::Tls { host, port, .. } => Node {
            host: host.clone(),
            port: *port,
        },
        Addr::Unix(_) => Node {
            host: "localhost".into(),
            port: 0,
        },
    }
}

/// A URL cut where a URL parser cuts it; the authority not parsed yet.
struct Parts<'a> {
    userinfo: Option<&'a str>,
    hosts: &'a str,
    path: &'a str,
    query: Option<&'a str>,
    fragment: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// `None` without a `//`.
    fn split(rest: &'a str) -> Option<Parts<'a>> {
        let (rest, fragment) = match rest.split_once('#') {
            Some((rest, fragment)) => (rest, Some(fragment)),
            None => (rest, None),
        };
        let (rest, query) = match rest.split_once('?') {
            Some((rest, query)) => (rest, Some(query)),
            None => (rest, None),
        };
        let after = rest.strip_prefix("//")?;
        let end = after.find('/').unwrap_or(after.len());
        let (authority, path) = after.split_at(end);
        let (userinfo, hosts) = match authority.rfind('@') {
            Some(at) => (Some(&authority[..at]), &authority[at + 1..]),
            None => (None, authority),
        };
        Some(Parts {
            userinfo,
            hosts,
            path,
            query,
            fragment,
        })
    }

    /// The hosts listed, each checked to be there.
    fn hosts(&self) -> Result<Vec<&'a str>, String> {
        let hosts: Vec<&str> = self.hosts.split(',').collect();
        if hosts.len() > MOST_HOSTS {
            return Err(format!("more than {MOST_HOSTS} hosts"));
        }
        if hosts.iter().any(|host| host.is_empty()) {
            return Err("an empty host in the comma-separated list".into());
        }
        Ok(hosts)
    }

    /// A URL of one server: `scheme`, `host`, and `path` and the rest.
    fn one(&self, scheme: &str, host: &str, path: &str, query: bool) -> String {
        let mut out = format!("{scheme}://");
        if let Some(userinfo) = self.userinfo {
            out.push_str(userinfo);
            out.push('@');
        }
        out.push_str(host);
        out.push_str(path);
        if let (true, Some(q)) = (query, self.query) {
            out.push('?');
            out.push_str(q);
        }
        if let Some(fragment) = self.fragment {
            out.push('#');
            out.push_str(fragment);
        }
        out
    }
}

/// Parse a state URL; an error says what is wrong in a few words, and
/// quotes no piece of a password (see `url::parse`).
pub(crate) fn parse(input: &str) -> Result<Target, String> {
    let cleaned = url::clean(input);
    let split = url::split_scheme(&cleaned);
    if let Some((scheme, rest)) = &split
        && let Some(data_scheme) = scheme.strip_suffix("+sentinel")
    {
        return sentinel(data_scheme, rest).map(Target::Sentinel);
    }
    let listed = split
        .as_ref()
        .and_then(|(scheme, rest)| Some((scheme, Parts::split(rest)?)))
        .filter(|(_, parts)| parts.hosts.contains(','));
    let Some((scheme, parts)) = listed else {
        return url::parse(&cleaned).map(Target::Server);
    };
    let seeds = parts
        .hosts()?
        .into_iter()
        .map(|host| url::parse(&parts.one(scheme, host, parts.path, true)))
        .collect::<Result<Vec<_>, _>>()?;
    if seeds.iter().any(|seed| matches!(seed.addr, Addr::Unix(_))) {
        return Err("a list of hosts is for TCP: redis://HOST:PORT,HOST:PORT".into());
    }
    if seeds.iter().any(|seed| seed.db != 0) {
        return Err("a Redis Cluster (a list of hosts) has database 0 only: drop the /DB".into());
    }
    Ok(Target::Cluster(seeds))
}

fn sentinel(data_scheme: &str, rest: &str) -> Result<Discovery, String> {
    let tls = match data_scheme {
        "redis" | "valkey" => false,
        "rediss" | "valkeys" => true,
        other => {
            return Err(format!(
                "{other}+sentinel: is not a Redis scheme: {SENTINEL_FORM}"
            ));
        }
    };
    let parts = Parts::split(rest).ok_or_else(|| format!("not a URL: {SENTINEL_FORM}"))?;
    let query = parts.query.map(url::query_pairs).unwrap_or_default();
    let tls = tls || matches!(url::last(&query, "tls"), Some("true" | "yes" | "1"));
    let scheme = if tls { "rediss" } else { "redis" };
    let path = parts.path.strip_prefix('/').unwrap_or("");
    let (name, db) = path.split_once('/').unwrap_or((path, ""));
    if name.is_empty() {
        return Err(format!("no master name: {SENTINEL_FORM}"));
    }
    let master = url::decode_utf8(name, "the master's name")?;
    if master.len() > 200 || master.chars().any(|c| c.is_control() || c == ' ') {
        return Err("the master's name has a space or a control character, or is too long".into());
    }
    let db = match db.trim_matches('/') {
        "" => String::new(),
        db => format!("/{db}"),
    };
    let data = url::parse(&parts.one(scheme, "master.invalid", &db, true))?;
    let credential = |key: &str| {
        url::last(&query, key)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let bare = Parts {
        userinfo: None,
        ..parts
    };
    let sentinels = parts
        .hosts()?
        .into_iter()
        .map(|host| {
            let has_port = match host.strip_prefix('[') {
                Some(v6) => v6.contains("]:"),
                None => host.contains(':'),
            };
            let host = if has_port {
                host.to_string()
            } else {
                format!("{host}:{SENTINEL_PORT}")
            };
            let mut url = url::parse(&bare.one(scheme, &host, "", false))?;
            url.username = credential("sentinel_username");
            url.password = credential("sentinel_password");
            Ok(url)
        })
        .collect::<Result<Vec<_>, String>>()?;
    Ok(Discovery {
        sentinels,
        master,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(url: &str) -> RedisUrl {
        url::parse(url).unwrap()
    }

    /// Where `redis://HOST:PORT` is.
    fn tcp(host: &str, port: u16) -> Addr {
        let node = Node {
            host: host.into(),
            port,
        };
        server(&format!("redis://{node}")).addr
    }

    #[test]
    fn one_host_is_one_server_as_before() {
        for url in [
            "redis://127.0.0.1:6379/0",
            "rediss://:secret@db:6380/0",
            "redis+unix:///run/redis.sock?db=2",
            "redis://[::1]:6380/3",
            "redis://u:p,q@h/1",
        ] {
            assert_eq!(parse(url), Ok(Target::Server(server(url))), "{url}");
        }
    }

    #[test]
    fn several_hosts_are_the_seeds_of_a_cluster() {
        let Ok(Target::Cluster(seeds)) =
            parse("redis://u:p%40ss@10.0.0.1:7000,node-2:7001,[::1]:7002,node-4/0?protocol=2")
        else {
            panic!()
        };
        let addrs: Vec<Addr> = seeds.iter().map(|s| s.addr.clone()).collect();
        assert_eq!(
            addrs,
            [
                tcp("10.0.0.1", 7000),
                tcp("node-2", 7001),
                tcp("::1", 7002),
                tcp("node-4", 6379)
            ]
        );
        assert!(seeds.iter().all(|s| s.username.as_deref() == Some("u")
            && s.password.as_deref() == Some("p@ss")
            && s.db == 0));
        let Ok(Target::Cluster(tls)) = parse("rediss://a:1,b:2") else {
            panic!()
        };
        assert!(tls.iter().all(RedisUrl::uses_tls));
        assert!(parse("valkeys://a:1,b:2").unwrap().uses_tls());
        assert!(!parse("valkey://a:1,b:2").unwrap().uses_tls());
    }

    #[test]
    fn sentinel_urls_name_the_sentinels_the_master_and_its_database() {
        let Ok(Target::Sentinel(s)) = parse(
            "redis+sentinel://app:s%3Acret@10.0.0.1,10.0.0.2:26380,[::1]/my%2Dmaster/2?sentinel_password=sp&sentinel_username=su",
        ) else {
            panic!()
        };
        assert_eq!(s.master, "my-master");
        assert_eq!(s.data.db, 2);
        assert_eq!(s.data.username.as_deref(), Some("app"));
        assert_eq!(s.data.password.as_deref(), Some("s:cret"));
        assert!(!s.data.uses_tls());
        let addrs: Vec<Addr> = s.sentinels.iter().map(|s| s.addr.clone()).collect();
        assert_eq!(
            addrs,
            [
                tcp("10.0.0.1", 26379),
                tcp("10.0.0.2", 26380),
                tcp("::1", 26379)
            ]
        );
        assert!(
            s.sentinels
                .iter()
                .all(|s| s.username.as_deref() == Some("su")
                    && s.password.as_deref() == Some("sp")
                    && s.db == 0)
        );
        // Without sentinel credentials, none; the database defaults to 0.
        let Ok(Target::Sentinel(plain)) = parse("redis+sentinel://:pw@h/mymaster") else {
            panic!()
        };
        assert_eq!(plain.data.db, 0);
        assert_eq!(plain.data.password.as_deref(), Some("pw"));
        assert_eq!(plain.sentinels[0].password, None);
        // TLS: by the scheme or by ?tls=true, for the sentinels and the master.
        for url in [
            "rediss+sentinel://h/m",
            "redis+sentinel://h/m?tls=true",
            "valkeys+sentinel://h/m/",
        ] {
            let Ok(Target::Sentinel(s)) = parse(url) else {
                panic!("{url}")
            };
            assert!(s.data.uses_tls() && s.sentinels[0].uses_tls(), "{url}");
        }
        assert!(matches!(
            parse("VALKEY+SENTINEL://h:1,h:2/m"),
            Ok(Target::Sentinel(_))
        ));
    }

    #[test]
    fn bad_lists_and_sentinel_urls_are_refused_saying_why() {
        for (input, why) in [
            ("redis://a:1,,b:2", "an empty host"),
            ("redis://a:1,", "an empty host"),
            ("redis://a:1,b:x", "the port is not a number"),
            ("redis://a,b/x", "not a database number"),
            ("redis://a,b/2", "database 0 only"),
            ("redis+unix://a,b/x", "no absolute socket path"),
            ("redis+sentinel://h", "no master name"),
            ("redis+sentinel://h/", "no master name"),
            ("redis+sentinel://h//0", "no master name"),
            ("redis+sentinel://h/m/x", "not a database number"),
            ("redis+sentinel://h/m%20n%0a", "space or a control"),
            ("redis+sentinel:h/m", "not a URL"),
            ("redis+sentinel://a,,b/m", "an empty host"),
            ("redis+sentinel://a:99999/m", "the port is not a number"),
            ("http+sentinel://h/m", "not a Redis scheme"),
            ("redis+sentinel://h/m?protocol=9", "protocol=9"),
        ] {
            let err = parse(input).expect_err(input);
            assert!(err.contains(why), "{input}: {err}");
            assert!(!err.contains('\n'), "{input}: {err}");
        }
        let many = format!("redis://{}", vec!["h:1"; MOST_HOSTS + 1].join(","));
        assert!(parse(&many).unwrap_err().contains("more than"));
    }

    #[test]
    fn a_node_is_reached_with_the_urls_credentials_and_tls() {
        let node = Node {
            host: "10.1.1.1".into(),
            port: 7002,
        };
        let moved = at(&server("rediss://u:p@seed:7000/0"), &node);
        assert_eq!(moved, server("rediss://u:p@10.1.1.1:7002/0"));
        assert_eq!(super::node(&moved), node);
        let plain = at(&server("redis://:p@seed"), &node);
        assert_eq!(plain, server("redis://:p@10.1.1.1:7002"));
    }
}
