//! Widening a pattern for the scanner's prefilters (steps 1 and 2 of the
//! scanner): a superset of what it matches in a line, that never crosses a
//! line end and keeps the automata small.

use regex_syntax::hir::{
    Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind, Look,
    Repetition,
};

use super::is_line_end;

/// A widened form of a pattern, for the prefilters: on any run of lines it
/// matches within every line where the pattern matches that line alone,
/// and it never matches across a line end. Both follow from the rewrite:
///
/// - no class or literal matches `\n` or `\r` any more (a literal holding
///   one cannot match within a line: it fails);
/// - `^` and `$` in any mode, `\A` and `\z` become CRLF-mode multi-line
///   anchors, which hold at each line's start and end in the run (but one
///   case, see `empty_line_matches`), as they do on the line alone;
/// - ASCII word boundaries stay: the line end next to a line is a non-word
///   byte, as the edge of the line alone is;
/// - a Unicode class becomes its ASCII part or the lead bytes it can start
///   with followed by continuation bytes (a superset; no automaton blow-up);
/// - a Unicode word boundary is dropped (always true, a superset): the
///   lazy DFA gives up on those when it meets a non-ASCII byte;
/// - groups lose their captures; repetitions, concatenations and
///   alternations keep their shape.
pub(super) fn widen(hir: Hir) -> Hir {
    match hir.into_kind() {
        HirKind::Empty => Hir::empty(),
        HirKind::Literal(literal) => {
            if literal.0.iter().any(|&byte| is_line_end(byte)) {
                Hir::fail()
            } else {
                Hir::literal(literal.0)
            }
        }
        HirKind::Class(Class::Bytes(mut class)) => {
            class.difference(&ClassBytes::new([
                ClassBytesRange::new(b'\n', b'\n'),
                ClassBytesRange::new(b'\r', b'\r'),
            ]));
            Hir::class(Class::Bytes(class))
        }
        HirKind::Class(Class::Unicode(class)) => widen_unicode_class(class),
        HirKind::Look(look) => match look {
            Look::Start | Look::StartLF | Look::StartCRLF => Hir::look(Look::StartCRLF),
            Look::End | Look::EndLF | Look::EndCRLF => Hir::look(Look::EndCRLF),
            Look::WordAscii
            | Look::WordAsciiNegate
            | Look::WordStartAscii
            | Look::WordEndAscii
            | Look::WordStartHalfAscii
            | Look::WordEndHalfAscii => Hir::look(look),
            Look::WordUnicode
            | Look::WordUnicodeNegate
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode => Hir::empty(),
        },
        HirKind::Repetition(repetition) => Hir::repetition(Repetition {
            sub: Box::new(widen(*repetition.sub)),
            ..repetition
        }),
        HirKind::Capture(capture) => widen(*capture.sub),
        HirKind::Concat(subs) => Hir::concat(subs.into_iter().map(widen).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.into_iter().map(widen).collect()),
    }
}

/// A class of Unicode scalar values (matched as UTF-8) as bytes: its ASCII
/// members but `\n` and `\r`, or one of the lead bytes its 2-, 3- and
/// 4-byte encodings start with, followed by that many continuation bytes.
fn widen_unicode_class(mut class: ClassUnicode) -> Hir {
    class.difference(&ClassUnicode::new([
        ClassUnicodeRange::new('\n', '\n'),
        ClassUnicodeRange::new('\r', '\r'),
    ]));
    let mut ascii = ClassBytes::empty();
    let mut leads = [
        ClassBytes::empty(),
        ClassBytes::empty(),
        ClassBytes::empty(),
    ];
    for range in class.iter() {
        for sequence in regex_syntax::utf8::Utf8Sequences::new(range.start(), range.end()) {
            let first = sequence.as_slice()[0];
            let bytes = ClassBytesRange::new(first.start, first.end);
            match sequence.len() {
                1 => ascii.push(bytes),
                len => leads[len - 2].push(bytes),
            }
        }
    }
    let continuation = ClassBytes::new([ClassBytesRange::new(0x80, 0xBF)]);
    let mut alternatives = vec![Hir::class(Class::Bytes(ascii))];
    for (count, lead) in (1u32..).zip(leads) {
        if lead.ranges().is_empty() {
            continue;
        }
        alternatives.push(Hir::concat(vec![
            Hir::class(Class::Bytes(lead)),
            Hir::repetition(Repetition {
                min: count,
                max: Some(count),
                greedy: true,
                sub: Box::new(Hir::class(Class::Bytes(continuation.clone()))),
            }),
        ]));
    }
    Hir::alternation(alternatives)
}
