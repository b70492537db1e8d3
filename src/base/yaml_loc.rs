//! Line numbers for YAML paths, so that a message about `answerable[3].id` can say where that is.
//!
//! serde_yaml reports positions for syntax and type errors but keeps none once a document is
//! deserialized. Checks that run afterwards (duplicate ids, unknown sources) look the position
//! up here, in a second, event-level parse of the same text.

use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::Marker;

/// One step of a path into a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seg<'a> {
    Key(&'a str),
    Index(usize),
}

#[derive(Debug, Default)]
struct Node {
    line: usize,
    /// Mapping entries (key, value) or sequence items (index as key "").
    children: Vec<(Option<String>, Node)>,
}

/// The line of every node of a document, by path.
#[derive(Debug, Default)]
pub struct Locator {
    root: Option<Node>,
}

impl Locator {
    /// Parse `text`; a document that does not parse gives a locator that knows no lines.
    pub fn new(text: &str) -> Self {
        let mut builder = Builder::default();
        if Parser::new_from_str(text)
            .load(&mut builder, false)
            .is_err()
        {
            return Locator::default();
        }
        Locator {
            root: builder.done.pop(),
        }
    }

    /// The 1-based line where the value at `path` starts, or the nearest ancestor's line.
    pub fn line(&self, path: &[Seg<'_>]) -> Option<usize> {
        let mut node = self.root.as_ref()?;
        for seg in path {
            let next = match seg {
                Seg::Key(k) => node
                    .children
                    .iter()
                    .find(|(key, _)| key.as_deref() == Some(*k))
                    .map(|(_, n)| n),
                Seg::Index(i) => node.children.get(*i).map(|(_, n)| n),
            };
            match next {
                Some(n) => node = n,
                None => break,
            }
        }
        Some(node.line)
    }
}

/// A mapping key waiting for its value: the key and its line.
type Pending = Option<(Option<String>, usize)>;

#[derive(Default)]
struct Builder {
    /// Open containers: (node, is_mapping, pending key).
    stack: Vec<(Node, bool, Pending)>,
    done: Vec<Node>,
}

impl Builder {
    /// `empty`: the value is a null left empty (`question:` and nothing after it), which the
    /// parser marks at the next token, often on a later line: its line is its key's.
    fn push_value(&mut self, mut node: Node, scalar: Option<String>, empty: bool) {
        match self.stack.last_mut() {
            None => self.done.push(node),
            Some((parent, true, pending)) => match pending.take() {
                None => *pending = Some((scalar, node.line)),
                Some((key, key_line)) => {
                    if empty {
                        node.line = key_line;
                    }
                    parent.children.push((key, node))
                }
            },
            Some((parent, false, _)) => parent.children.push((None, node)),
        }
    }
}

impl MarkedEventReceiver for Builder {
    fn on_event(&mut self, ev: Event, mark: Marker) {
        let leaf = |line| Node {
            line,
            children: Vec::new(),
        };
        match ev {
            Event::Scalar(value, style, ..) => {
                let empty = value.is_empty() && style == yaml_rust2::scanner::TScalarStyle::Plain;
                self.push_value(leaf(mark.line()), Some(value), empty)
            }
            Event::Alias(_) => self.push_value(leaf(mark.line()), None, false),
            Event::SequenceStart(..) => self.stack.push((leaf(mark.line()), false, None)),
            Event::MappingStart(..) => self.stack.push((leaf(mark.line()), true, None)),
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((node, _, _)) = self.stack.pop() {
                    self.push_value(node, None, false);
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_lines_of_items_and_fields() {
        let text = "corpus: club\nanswerable:\n  - question: a\n    id: x\n  - question: b\n    expect:\n      sources: [s.md#A, s.md#B]\nunanswerable: []\n";
        let loc = Locator::new(text);
        assert_eq!(loc.line(&[Seg::Key("corpus")]), Some(1));
        assert_eq!(
            loc.line(&[Seg::Key("answerable"), Seg::Index(0), Seg::Key("id")]),
            Some(4)
        );
        assert_eq!(loc.line(&[Seg::Key("answerable"), Seg::Index(1)]), Some(5));
        let src = [
            Seg::Key("answerable"),
            Seg::Index(1),
            Seg::Key("expect"),
            Seg::Key("sources"),
            Seg::Index(1),
        ];
        assert_eq!(loc.line(&src), Some(7));
        // A missing field falls back to its parent's line.
        assert_eq!(
            loc.line(&[Seg::Key("answerable"), Seg::Index(0), Seg::Key("tags")]),
            Some(3)
        );
    }

    #[test]
    fn an_empty_value_is_on_its_keys_line() {
        let text = "answerable:\n  - id: x\n    question:\n\n    expect: {}\n  - question:\n";
        let loc = Locator::new(text);
        let at = |i, k| loc.line(&[Seg::Key("answerable"), Seg::Index(i), Seg::Key(k)]);
        assert_eq!((at(0, "question"), at(1, "question")), (Some(3), Some(6)));
        assert_eq!(at(0, "expect"), Some(5));
    }

    #[test]
    fn broken_yaml_gives_no_lines() {
        assert_eq!(Locator::new("a: [").line(&[Seg::Key("a")]), None);
    }
}
