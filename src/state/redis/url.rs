//! Redis URLs, parsed here (the `redis` crate did it before, and brought
//! about 40 crates into the build for that alone).
//!
//! - `redis://[[USER][:PASSWORD]@]HOST[:PORT][/DB]`: TCP, `rediss://` the
//!   same over TLS. HOST is a name, an IPv4 address, or an IPv6 address in
//!   brackets; PORT is 6379 unless given, DB 0. USER and PASSWORD are
//!   percent-decoded (`%40` for `@`, `%2F` for `/`). A password makes the
//!   connection start with AUTH (with the user, when one is given); a user
//!   without a password sends no AUTH.
//! - `redis+unix:///PATH?db=N&user=USER&pass=PASSWORD` (also `unix:///`):
//!   a Unix socket; the path is percent-decoded, its host empty or
//!   `localhost`.
//! - `valkey://`, `valkeys://` and `valkey+unix://` are the same.
//! - `?protocol=` (`2`, `resp2`, `3`, `resp3`) is accepted and changes
//!   nothing: the client speaks RESP2. Other query parameters of a TCP URL
//!   are ignored (`?password=` is not a password: it never was).
//! - `rediss://...#insecure` parses, and is refused when connecting: the
//!   server's certificate is always checked. Any other fragment of a
//!   `rediss://` URL is an error.
//!
//! What this accepts, and how it reads it, is what the `redis` crate did
//! (with the `url` crate's WHATWG parsing underneath), odd input included:
//! spaces and control characters around the URL are dropped and tabs and
//! line breaks inside it removed, the scheme is case-insensitive, the
//! userinfo ends at the last `@`, `.` and `..` path segments are resolved,
//! an IPv6 host is written the standard way (`[0:0::1]` is `::1`), a name
//! keeps its case (a non-ASCII one is percent-encoded, and so resolves to
//! nothing), and the wildcard addresses `0.0.0.0` and `::` are refused.

use std::net::Ipv6Addr;
use std::path::PathBuf;

/// Redis's own port.
pub(crate) const DEFAULT_PORT: u16 = 6379;

/// Where the server is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Addr {
    Tcp {
        host: String,
        port: u16,
    },
    Tls {
        host: String,
        port: u16,
        /// `#insecure`: refused when connecting.
        insecure: bool,
    },
    Unix(PathBuf),
}

/// A parsed Redis URL: the server, the database, the credentials.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RedisUrl {
    pub(crate) addr: Addr,
    pub(crate) db: i64,
    pub(crate) username: Option<String>,
    pub(crate) password: Option<String>,
}

impl RedisUrl {
    /// `rediss://`: TLS, so a `--state-ca` means something.
    pub(crate) fn uses_tls(&self) -> bool {
        matches!(self.addr, Addr::Tls { .. })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Tcp,
    Tls,
    Unix,
}

/// The host part of the authority.
#[derive(Debug, PartialEq, Eq)]
enum Host {
    /// `redis+unix:///path`: nothing between the `//` and the path.
    Empty,
    /// A name or an IPv4 address, as written (non-ASCII percent-encoded).
    Name(String),
    V6(Ipv6Addr),
}

/// What comes between `//` and the path.
struct Authority<'a> {
    /// Still percent-encoded.
    username: &'a str,
    password: Option<&'a str>,
    host: Host,
    port: Option<u16>,
}

const FORMS: &str = "redis://HOST[:PORT][/DB], rediss://... or redis+unix:///PATH";

/// Parse `input`; an error says what is wrong in a few words (the caller
/// names the flag or variable and shows the URL without its password).
/// It quotes nothing from the authority, the path or the fragment: with a
/// `/`, `?` or `#` in the password (unencoded), a piece of it is there.
pub(crate) fn parse(input: &str) -> Result<RedisUrl, String> {
    let cleaned = clean(input);
    let Some((scheme, rest)) = split_scheme(&cleaned) else {
        return Err(format!("not a URL: {FORMS}"));
    };
    let kind = match scheme.as_str() {
        "redis" | "valkey" => Kind::Tcp,
        "rediss" | "valkeys" => Kind::Tls,
        "redis+unix" | "valkey+unix" | "unix" => Kind::Unix,
        other => return Err(format!("{other}: is not a Redis scheme: {FORMS}")),
    };
    let (rest, fragment) = split_off(rest, '#');
    let (rest, query) = split_off(rest, '?');
    let (authority, path) = match rest.strip_prefix("//") {
        Some(after) => {
            let end = after.find('/').unwrap_or(after.len());
            (Some(authority(&after[..end])?), &after[end..])
        }
        None => (None, rest),
    };
    let query = query.map(query_pairs).unwrap_or_default();
    if let Some(protocol) = last(&query, "protocol")
        && !matches!(protocol, "2" | "resp2" | "3" | "resp3")
    {
        return Err(format!(
            "protocol={protocol}: the protocol is 2, resp2, 3 or resp3"
        ));
    }
    if kind == Kind::Unix {
        return unix(authority.as_ref(), path, &query);
    }
    let Some(authority) = authority.filter(|a| a.host != Host::Empty) else {
        return Err(format!("no host: {FORMS}"));
    };
    let host = match authority.host {
        Host::Name(name) => name,
        Host::V6(ip) => ip.to_string(),
        Host::Empty => unreachable!("filtered above"),
    };
    if host == "0.0.0.0" || host == "::" {
        return Err(format!(
            "{host} is a wildcard address: no server can be reached at it"
        ));
    }
    let port = authority.port.unwrap_or(DEFAULT_PORT);
    let addr = if kind == Kind::Tls {
        let insecure = match fragment {
            None => false,
            Some("insecure") => true,
            Some(_) => {
                return Err("the one fragment a rediss:// URL may have is #insecure".into());
            }
        };
        Addr::Tls {
            host,
            port,
            insecure,
        }
    } else {
        Addr::Tcp { host, port }
    };
    let db = match normalize(path).trim_matches('/') {
        "" => 0,
        db => db
            .parse()
            .map_err(|_| "the path is not a database number, as in /0".to_string())?,
    };
    let username = match authority.username {
        "" => None,
        user => Some(decode_utf8(user, "the user name")?),
    };
    let password = authority
        .password
        .map(|password| decode_utf8(password, "the password"))
        .transpose()?;
    Ok(RedisUrl {
        addr,
        db,
        username,
        password,
    })
}

/// `input` as a URL parser reads it: spaces and control characters
/// around it dropped, tabs and line breaks inside removed.
pub(super) fn clean(input: &str) -> String {
    input
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect()
}

/// `redis+unix:///path?db=N&user=U&pass=P`.
fn unix(
    authority: Option<&Authority<'_>>,
    path: &str,
    query: &[(String, String)],
) -> Result<RedisUrl, String> {
    let local = match authority.map(|a| &a.host) {
        None | Some(Host::Empty) => true,
        Some(Host::Name(name)) => name == "localhost",
        Some(Host::V6(_)) => false,
    };
    if !local || !path.starts_with('/') {
        return Err(
            "no absolute socket path: redis+unix:///PATH (three slashes), or with the host localhost"
                .into(),
        );
    }
    let mut bytes = Vec::new();
    for segment in normalize(path)[1..].split('/') {
        bytes.push(b'/');
        bytes.extend(percent_decode(segment));
    }
    let db = match last(query, "db") {
        None => 0,
        Some(db) => db
            .parse()
            .map_err(|_| format!("db={db}: the database is a number, as in db=0"))?,
    };
    Ok(RedisUrl {
        addr: Addr::Unix(crate::sys::fs::path_from_bytes(&bytes)),
        db,
        username: last(query, "user").map(str::to_string),
        password: last(query, "pass").map(str::to_string),
    })
}

/// The scheme, lowercased, and what follows its `:`; `None` when the
/// input does not start with one (a letter, then letters, digits, `+`,
/// `-` or `.`).
pub(super) fn split_scheme(input: &str) -> Option<(String, &str)> {
    let colon = input.find(':')?;
    let scheme = &input[..colon];
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| (scheme.to_ascii_lowercase(), &input[colon + 1..]))
}

/// `text` cut at the first `at`: before, and after (if it was there).
fn split_off(text: &str, at: char) -> (&str, Option<&str>) {
    match text.split_once(at) {
        Some((before, after)) => (before, Some(after)),
        None => (text, None),
    }
}

fn authority(text: &str) -> Result<Authority<'_>, String> {
    let (userinfo, hostport) = match text.rfind('@') {
        Some(at) => (Some(&text[..at]), &text[at + 1..]),
        None => (None, text),
    };
    if userinfo.is_some() && hostport.is_empty() {
        return Err(format!("no host after the '@': {FORMS}"));
    }
    let (username, password) = match userinfo {
        None => ("", None),
        Some(info) => match info.split_once(':') {
            // An empty password is no password.
            Some((user, password)) => (user, Some(password).filter(|p| !p.is_empty())),
            None => (info, None),
        },
    };
    // The host ends at the first ':' outside brackets.
    let mut inside = false;
    let colon = hostport.char_indices().find_map(|(i, c)| {
        match c {
            '[' => inside = true,
            ']' => inside = false,
            ':' if !inside => return Some(i),
            _ => {}
        }
        None
    });
    let (host, port) = match colon {
        Some(i) => (&hostport[..i], Some(&hostport[i + 1..])),
        None => (hostport, None),
    };
    if host.is_empty() && port.is_some() {
        return Err(format!("no host before the port: {FORMS}"));
    }
    let host = if host.is_empty() {
        Host::Empty
    } else if let Some(inner) = host.strip_prefix('[') {
        let ip = inner
            .strip_suffix(']')
            .and_then(|inner| inner.parse::<Ipv6Addr>().ok())
            .ok_or("the host in brackets is not an IPv6 address")?;
        Host::V6(ip)
    } else if host.contains([
        '\0', ' ', '#', '/', ':', '<', '>', '?', '@', '[', '\\', ']', '^', '|',
    ]) {
        return Err(
            "the host name has a character no host name can have (one of #/:<>?@[\\]^| or a space)"
                .into(),
        );
    } else {
        Host::Name(encode_controls(host))
    };
    let port = match port {
        None | Some("") => None,
        Some(digits) => Some(
            digits
                .parse::<u16>()
                .ok()
                .filter(|_| digits.bytes().all(|b| b.is_ascii_digit()))
                .ok_or("the port is not a number from 0 to 65535")?,
        ),
    };
    Ok(Authority {
        username,
        password,
        host,
        port,
    })
}

/// `path` with its `.` and `..` segments resolved (also written `%2e`),
/// as a URL's path is.
fn normalize(path: &str) -> String {
    let Some(rest) = path.strip_prefix('/') else {
        return path.to_string();
    };
    let dot = |s: &str| s == "." || s.eq_ignore_ascii_case("%2e");
    let dots = |s: &str| {
        matches!(s.len(), 2 | 4 | 6)
            && (s == ".."
                || s.eq_ignore_ascii_case(".%2e")
                || s.eq_ignore_ascii_case("%2e.")
                || s.eq_ignore_ascii_case("%2e%2e"))
    };
    let mut kept: Vec<&str> = Vec::new();
    let mut segments = rest.split('/').peekable();
    while let Some(segment) = segments.next() {
        let last = segments.peek().is_none();
        if dots(segment) {
            kept.pop();
            if last {
                kept.push("");
            }
        } else if dot(segment) {
            if last {
                kept.push("");
            }
        } else {
            kept.push(segment);
        }
    }
    format!("/{}", kept.join("/"))
}

/// `a=1&b=2`, as a form decodes it (`+` is a space); empty pairs skipped.
pub(super) fn query_pairs(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |text: &str| {
                String::from_utf8_lossy(&percent_decode(&text.replace('+', " "))).into_owned()
            };
            (decode(key), decode(value))
        })
        .collect()
}

/// The value of the last `key` in `query`.
pub(super) fn last<'a>(query: &'a [(String, String)], key: &str) -> Option<&'a str> {
    query
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// `%XX` sequences decoded; a `%` not followed by two hex digits stays.
fn percent_decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |at: usize| bytes.get(at).and_then(|b| (*b as char).to_digit(16));
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                out.push((high * 16 + low) as u8);
                i += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

pub(super) fn decode_utf8(text: &str, what: &str) -> Result<String, String> {
    String::from_utf8(percent_decode(text))
        .map_err(|_| format!("{what} is not UTF-8 once percent-decoded"))
}

/// A host name as a URL keeps it: control characters and non-ASCII
/// percent-encoded.
fn encode_controls(host: &str) -> String {
    let mut out = String::with_capacity(host.len());
    for c in host.chars() {
        if c.is_ascii() && !c.is_ascii_control() {
            out.push(c);
        } else {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: u16) -> Addr {
        Addr::Tcp {
            host: host.into(),
            port,
        }
    }

    fn tls(host: &str, port: u16, insecure: bool) -> Addr {
        Addr::Tls {
            host: host.into(),
            port,
            insecure,
        }
    }

    fn unix(path: &str) -> Addr {
        Addr::Unix(PathBuf::from(path))
    }

    /// A URL, and its address, database, user and password.
    type Row = (
        &'static str,
        Addr,
        i64,
        Option<&'static str>,
        Option<&'static str>,
    );

    /// Read as the `redis` crate read them (checked against it, input by
    /// input, before it was dropped).
    #[test]
    #[allow(clippy::too_many_lines, reason = "a table of URL forms")]
    fn urls_are_read_as_before() {
        let none = None::<&str>;
        let table: &[Row] = &[
            (
                "redis://127.0.0.1:6379/0",
                tcp("127.0.0.1", 6379),
                0,
                none,
                none,
            ),
            ("redis://db.example", tcp("db.example", 6379), 0, none, none),
            (
                "redis://db.example/",
                tcp("db.example", 6379),
                0,
                none,
                none,
            ),
            ("redis://h:6380/15", tcp("h", 6380), 15, none, none),
            ("redis://h:/2", tcp("h", 6379), 2, none, none),
            ("redis://h:00006379", tcp("h", 6379), 0, none, none),
            ("redis://h:0", tcp("h", 0), 0, none, none),
            ("redis://h/1/", tcp("h", 6379), 1, none, none),
            ("redis://h//1//", tcp("h", 6379), 1, none, none),
            ("redis://h/+1", tcp("h", 6379), 1, none, none),
            ("redis://h/-1", tcp("h", 6379), -1, none, none),
            ("redis://h/a/../2", tcp("h", 6379), 2, none, none),
            ("redis://h/%2e/3", tcp("h", 6379), 3, none, none),
            ("redis://h/1/..", tcp("h", 6379), 0, none, none),
            // Case: the scheme's is ignored, the host's kept.
            ("REDIS://H.Example/1", tcp("H.Example", 6379), 1, none, none),
            ("valkey://h", tcp("h", 6379), 0, none, none),
            // Around and inside: spaces, controls, tabs and line breaks.
            ("  redis://h/1\n", tcp("h", 6379), 1, none, none),
            ("redis://h\t/1", tcp("h", 6379), 1, none, none),
            // IPv6 in brackets, written the standard way.
            ("redis://[::1]:6380/3", tcp("::1", 6380), 3, none, none),
            ("redis://[0:0:0:0:0:0:0:1]", tcp("::1", 6379), 0, none, none),
            (
                "redis://[::FFFF:10.0.0.1]",
                tcp("::ffff:10.0.0.1", 6379),
                0,
                none,
                none,
            ),
            // A name is kept as written, non-ASCII percent-encoded.
            ("redis://h%41/", tcp("h%41", 6379), 0, none, none),
            ("redis://höst/", tcp("h%C3%B6st", 6379), 0, none, none),
            // Credentials: percent-decoded, split at the first ':', the
            // userinfo ending at the last '@'.
            (
                "redis://user:secret@h:6379/2",
                tcp("h", 6379),
                2,
                Some("user"),
                Some("secret"),
            ),
            ("redis://:secret@h", tcp("h", 6379), 0, none, Some("secret")),
            ("redis://user@h", tcp("h", 6379), 0, Some("user"), none),
            ("redis://user:@h", tcp("h", 6379), 0, Some("user"), none),
            ("redis://:@h/1", tcp("h", 6379), 1, none, none),
            ("redis://@h", tcp("h", 6379), 0, none, none),
            ("redis://a:b:c@h", tcp("h", 6379), 0, Some("a"), Some("b:c")),
            ("redis://a@b@h", tcp("h", 6379), 0, Some("a@b"), none),
            (
                "redis://p%40ss:w%2Fd%3a%zz@h",
                tcp("h", 6379),
                0,
                Some("p@ss"),
                Some("w/d:%zz"),
            ),
            (
                "redis://u:p@[::1]:7/2",
                tcp("::1", 7),
                2,
                Some("u"),
                Some("p"),
            ),
            // The query: a protocol is accepted; nothing else is read, a
            // password there included.
            ("redis://h?protocol=resp3", tcp("h", 6379), 0, none, none),
            ("redis://h/4?protocol=2&db=9", tcp("h", 6379), 4, none, none),
            ("redis://h?password=x", tcp("h", 6379), 0, none, none),
            // A fragment of a plain URL is ignored.
            ("redis://h#anything", tcp("h", 6379), 0, none, none),
            // TLS.
            (
                "rediss://:secret@db:6380/0",
                tls("db", 6380, false),
                0,
                none,
                Some("secret"),
            ),
            ("rediss://h", tls("h", 6379, false), 0, none, none),
            ("valkeys://h", tls("h", 6379, false), 0, none, none),
            (
                "rediss://[::1]:6380#insecure",
                tls("::1", 6380, true),
                0,
                none,
                none,
            ),
            (
                "rediss://u%3Ax:p%3A%40@h.example:6380/15#insecure",
                tls("h.example", 6380, true),
                15,
                Some("u:x"),
                Some("p:@"),
            ),
            // Unix sockets: the path percent-decoded and resolved; the
            // database and credentials in the query, form-decoded.
            (
                "redis+unix:///run/redis.sock",
                unix("/run/redis.sock"),
                0,
                none,
                none,
            ),
            (
                "unix:///run/redis.sock?db=2&pass=secret",
                unix("/run/redis.sock"),
                2,
                none,
                Some("secret"),
            ),
            (
                "unix:/run/redis.sock",
                unix("/run/redis.sock"),
                0,
                none,
                none,
            ),
            ("valkey+unix:///s", unix("/s"), 0, none, none),
            (
                "redis+unix://localhost/tmp/s",
                unix("/tmp/s"),
                0,
                none,
                none,
            ),
            (
                "redis+unix:///tmp/my%20sock?db=3&user=u&pass=p%20q+r",
                unix("/tmp/my sock"),
                3,
                Some("u"),
                Some("p q r"),
            ),
            ("redis+unix:///x?db=1&db=2", unix("/x"), 2, none, none),
            ("redis+unix:///a/../b/./c", unix("/b/c"), 0, none, none),
            ("redis+unix:///a/b/..", unix("/a/"), 0, none, none),
            ("redis+unix:///", unix("/"), 0, none, none),
            // Credentials in the userinfo of a socket URL are not read.
            ("redis+unix://u:p@localhost/s", unix("/s"), 0, none, none),
        ];
        for (input, addr, db, username, password) in table {
            let url = parse(input).unwrap_or_else(|err| panic!("{input}: {err}"));
            assert_eq!(
                url,
                RedisUrl {
                    addr: addr.clone(),
                    db: *db,
                    username: username.map(str::to_string),
                    password: password.map(str::to_string),
                },
                "{input}"
            );
        }
        assert!(parse("rediss://h").unwrap().uses_tls());
        assert!(!parse("redis://h").unwrap().uses_tls());
        assert!(!parse("redis+unix:///s").unwrap().uses_tls());
    }

    #[test]
    #[cfg(unix)]
    fn a_path_that_is_not_utf8_is_kept_as_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let url = parse("redis+unix:///tmp/%ff").unwrap();
        let Addr::Unix(path) = url.addr else {
            panic!("{url:?}")
        };
        assert_eq!(path.as_os_str().as_bytes(), b"/tmp/\xff");
    }

    #[test]
    fn bad_urls_are_refused_saying_why_in_one_line() {
        let table = [
            ("", "not a URL"),
            ("garbage", "not a URL"),
            ("127.0.0.1:6379", "not a URL"),
            ("1redis://h", "not a URL"),
            ("http://example", "http: is not a Redis scheme"),
            ("redis//h", "not a URL"),
            ("redis://", "no host"),
            ("redis:h", "no host"),
            ("redis:///0", "no host"),
            ("redis://user@", "no host after the '@'"),
            ("redis://u:p@/1", "no host after the '@'"),
            ("redis://:6379", "no host before the port"),
            ("redis://0.0.0.0", "wildcard"),
            ("redis://[::]:6379", "wildcard"),
            ("redis://[0::0]", "wildcard"),
            ("redis://[::1", "not an IPv6 address"),
            ("redis://[::1]x:80", "not an IPv6 address"),
            ("redis://[nope]", "not an IPv6 address"),
            ("redis://a b", "no host name can have"),
            ("redis://h^/", "no host name can have"),
            ("redis://h:65536", "the port is not a number"),
            ("redis://h:12a", "the port is not a number"),
            ("redis://h:-1", "the port is not a number"),
            ("redis://h:80:90", "the port is not a number"),
            ("redis://h/x", "not a database number"),
            ("redis://h/1/2", "not a database number"),
            ("redis://h/%31", "not a database number"),
            ("redis://h/99999999999999999999", "not a database number"),
            ("rediss://h#foo", "#insecure"),
            ("rediss://h/#", "#insecure"),
            ("redis://h?protocol=9", "protocol=9"),
            ("redis+unix:///x?protocol=4", "protocol=4"),
            ("redis://u%ff:p@h", "the user name is not UTF-8"),
            ("redis://u:p%ff@h", "the password is not UTF-8"),
            ("redis+unix://host/x.sock", "no absolute socket path"),
            ("redis+unix://[::1]/x.sock", "no absolute socket path"),
            ("redis+unix://", "no absolute socket path"),
            ("unix:run/x", "no absolute socket path"),
            ("redis+unix:///x?db=x", "db=x"),
        ];
        for (input, why) in table {
            let err = parse(input).expect_err(input);
            assert!(err.contains(why), "{input}: {err}");
            assert!(!err.contains('\n'), "{input}: {err}");
        }
    }

    /// An unencoded '/', '?' or '#' in a password cuts the authority short,
    /// and what is left would name a port or a path: never quoted.
    #[test]
    fn errors_quote_no_piece_of_a_password() {
        for input in [
            "redis://u:QQQ/ZZZ@h/0",
            "redis://u:QQQ?ZZZ@h/0",
            "redis://u:/ZZZ@h/0",
            "rediss://u:#ZZZ@h",
            "redis://u:QQQ#ZZZ@h",
            "redis://u:QQQ/@h",
        ] {
            let err = parse(input).expect_err(input);
            assert!(
                !err.contains("QQQ") && !err.contains("ZZZ"),
                "{input}: {err}"
            );
        }
    }

    #[test]
    fn dot_segments_are_resolved_as_in_any_url() {
        for (path, resolved) in [
            ("", ""),
            ("/", "/"),
            ("/a/b", "/a/b"),
            ("/a/./b", "/a/b"),
            ("/a/../b", "/b"),
            ("/../a", "/a"),
            ("/a/..", "/"),
            ("/a/.", "/a/"),
            ("/a/%2E%2e/b", "/b"),
            ("/a/.%2e", "/"),
            ("/a/..b", "/a/..b"),
            ("//a", "//a"),
        ] {
            assert_eq!(normalize(path), resolved, "{path}");
        }
    }

    #[test]
    fn percent_decoding_leaves_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%20b%2fc"), b"a b/c");
        assert_eq!(percent_decode("100%"), b"100%");
        assert_eq!(percent_decode("%zz%4"), b"%zz%4");
        assert_eq!(percent_decode("%C3%A9"), "é".as_bytes());
    }
}
