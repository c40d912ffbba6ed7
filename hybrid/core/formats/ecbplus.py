"""ECB+ only: the usual topic split, and the converter from the public ECB+ 1.0 release to a labelled collection.

Nothing in the engine reads ECB+ ids; this module is the one place that knows ECB+'s conventions, and
only ``python -m hybrid.data ecbplus`` and the bundled training set's builder use it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hybrid.core.atomic import atomic_write
from hybrid.core.errors import InputError
from hybrid.core.formats.lines import iter_lines

#: The usual ECB+ split (Cybulska & Vossen 2015): dev topics, test topics 36-45, train the rest.
DEV_TOPICS = frozenset({2, 5, 12, 18, 21, 23, 34, 35})
TEST_TOPICS = frozenset(range(36, 46))


def split_of(topic: int) -> str:
    """``train``, ``dev`` or ``test`` for an ECB+ topic number."""
    return "test" if topic in TEST_TOPICS else "dev" if topic in DEV_TOPICS else "train"


# ----------------------------------------------------------------------------------------------------------
# The converter from the ECB+ 1.0 release (ECB+_LREC2014: ECB+/<topic>/<topic>_<n>ecb(plus).xml + the CSV)

EVENT_PREFIXES = ("ACTION_", "NEG_ACTION_")
ENTITY_PREFIXES = ("HUMAN_", "NON_HUMAN_", "LOC_", "TIME_")
SENTENCES_CSV = "ECBplus_coreference_sentences.csv"
#: Tokens written without a space before them / after them (a simple detokeniser; offsets follow it).
NO_SPACE_BEFORE = frozenset({",", ".", ":", ";", "!", "?", ")", "]", "}", "%", "'s", "'S", "n't", "'re", "'ve", "'ll",
                             "'d", "'m", "''", "'"})
NO_SPACE_AFTER = frozenset({"(", "[", "{", "$", "``"})


@dataclass
class ConversionReport:
    """What the converter read, and what it had to leave out (never silently)."""

    documents: int = 0
    passages: int = 0
    mentions: int = 0
    labelled: int = 0
    skipped_cross_sentence: int = 0
    skipped_same_span: int = 0
    skipped_unknown_tag: int = 0
    test_labels_dropped: int = 0
    topics: dict[str, list[int]] = field(default_factory=dict)


def kind_of_tag(tag: str) -> str | None:
    """``event`` for ACTION_* / NEG_ACTION_*, ``entity`` for HUMAN_* / NON_HUMAN_* / LOC_* / TIME_*, else None."""
    if tag.startswith(EVENT_PREFIXES):
        return "event"
    if tag.startswith(ENTITY_PREFIXES):
        return "entity"
    return None


def detokenise(tokens: list[str]) -> tuple[str, list[tuple[int, int]]]:
    """Join a sentence's tokens with single spaces (none before punctuation and clitics, none after an opening
    bracket or ``$``); returns the text and each token's character span in it."""
    text, spans = "", []
    glue = True
    for token in tokens:
        if text and not glue and token not in NO_SPACE_BEFORE:
            text += " "
        spans.append((len(text), len(text) + len(token)))
        text += token
        glue = token in NO_SPACE_AFTER
    return text, spans


def read_validated(path: Path) -> set[tuple[str, int]]:
    """(document id, sentence number) of the curated sentences: ``topic,document,sentence`` lines, a header
    allowed; the document is ``10ecb`` or ``1_10ecb`` (either is read as ``1_10ecb``)."""
    out: set[tuple[str, int]] = set()
    for number, line in iter_lines(path):
        cols = [c.strip() for c in line.split(",")]
        if len(cols) != 3:
            raise InputError(path, number, f"expected 'topic,document,sentence_number', found {len(cols)} column(s)")
        topic, doc, sentence = cols
        if not (topic.isdigit() and sentence.isdigit()):
            if number == 1:
                continue  # the header
            raise InputError(path, number, "topic and sentence number must be integers")
        doc = doc.removesuffix(".xml")
        out.add((doc if doc.startswith(f"{topic}_") else f"{topic}_{doc}", int(sentence)))
    if not out:
        raise InputError(path, None, "no sentences listed")
    return out


def _parse_xml(path: Path) -> ET.Element:
    try:
        return ET.parse(path).getroot()
    except ET.ParseError as error:
        raise InputError(path, error.position[0], f"broken XML ({error})") from None
    except OSError as error:
        raise InputError(path, None, f"cannot read ({error.strerror})") from None


def _attr(path: Path, element: ET.Element, name: str) -> str:
    value = element.get(name)
    if value is None or not value.strip():
        raise InputError(path, None, f"<{element.tag}> without its {name!r} attribute")
    return value.strip()


def convert_document(path: Path, topic: int, validated: set[tuple[str, int]], report: ConversionReport,
                     keep_test_labels: bool = False) -> list[dict[str, Any]]:
    """One ECB+ XML document as labelled passages (one per sentence), in sentence order.

    Every mention gets a cluster, as in the project's ECB+ files: the ``note`` of its CROSS_DOC_COREF
    relation, else ``INTRA:<doc>:<r_id>`` of its INTRA_DOC_COREF chain, else ``SINGLETON:<doc>:<m_id>``
    (clusters of one document never make a training query, but they say the mention is annotated and
    coreferent with nothing elsewhere). Test topics get none unless ``keep_test_labels``.
    """
    root = _parse_xml(path)
    doc_id = path.stem
    split = split_of(topic)
    sentences: dict[int, list[tuple[str, str]]] = {}  # sentence -> [(t_id, token)]
    where: dict[str, tuple[int, int]] = {}  # t_id -> (sentence, position)
    for token in root.iter("token"):
        t_id = _attr(path, token, "t_id")
        sentence = _attr(path, token, "sentence")
        if not sentence.isdigit():
            raise InputError(path, None, f"token {t_id}: sentence {sentence!r} is not a number")
        if t_id in where:
            raise InputError(path, None, f"token t_id {t_id} appears twice")
        words = sentences.setdefault(int(sentence), [])
        where[t_id] = int(sentence), len(words)
        words.append((t_id, (token.text or "").strip()))
    texts = {s: detokenise([w for _, w in words]) for s, words in sentences.items()}
    clusters: dict[str, str] = {}  # m_id -> cross-document cluster (the relation's note) or INTRA:<doc>:<r_id>
    chains: dict[str, str] = {}
    relations = root.find("Relations")
    for number, relation in enumerate(relations if relations is not None else []):
        r_id = relation.get("r_id") or f"n{number}"
        for source in relation.iter("source"):
            m_id = _attr(path, source, "m_id")
            chains.setdefault(m_id, f"{doc_id}#r{r_id}")
            if relation.tag == "CROSS_DOC_COREF":
                clusters[m_id] = _attr(path, relation, "note")
            elif relation.tag == "INTRA_DOC_COREF":
                clusters.setdefault(m_id, f"INTRA:{doc_id}:{r_id}")
    mentions: dict[int, dict[tuple[int, int], dict[str, Any]]] = {}
    markables = root.find("Markables")
    for markable in markables if markables is not None else []:
        anchors = [_attr(path, a, "t_id") for a in markable.iter("token_anchor")]
        if not anchors:
            continue  # an instance markable (the target of a relation), not a mention
        m_id = _attr(path, markable, "m_id")
        kind = kind_of_tag(markable.tag)
        if kind is None:
            report.skipped_unknown_tag += 1
            continue
        unknown = next((t for t in anchors if t not in where), None)
        if unknown is not None:
            raise InputError(path, None, f"<{markable.tag} m_id={m_id!r}> anchors token {unknown}, which is not in "
                                         "the document")
        spots = sorted(where[t] for t in anchors)
        if len({s for s, _ in spots}) > 1:
            report.skipped_cross_sentence += 1
            continue
        sentence = spots[0][0]
        spans = texts[sentence][1]
        start, end = spans[spots[0][1]][0], spans[spots[-1][1]][1]
        if (start, end) in mentions.setdefault(sentence, {}):
            report.skipped_same_span += 1
            continue
        mention: dict[str, Any] = {"start": start, "end": end, "text": texts[sentence][0][start:end], "kind": kind,
                                   "tag": markable.tag, "m_id": m_id}
        mention["chain"] = chains.get(m_id, f"{doc_id}#m{m_id}")
        if split == "test" and not keep_test_labels:
            report.test_labels_dropped += 1
        else:
            mention["cluster"] = clusters.get(m_id, f"SINGLETON:{doc_id}:{m_id}")
            report.labelled += 1
        mentions[sentence][start, end] = mention
        report.mentions += 1
    out = []
    for sentence in sorted(sentences):
        text = texts[sentence][0]
        if not text.strip():
            continue
        found = sorted(mentions.get(sentence, {}).values(), key=lambda m: (m["start"], m["end"]))
        out.append({"id": f"{doc_id}:{sentence}", "doc_id": doc_id, "topic": topic, "split": split,
                    "sent_id": sentence, "validated": (doc_id, sentence) in validated, "text": text,
                    "mentions": found})
    report.documents += 1
    report.passages += len(out)
    topics = report.topics.setdefault(split, [])
    if topic not in topics:
        topics.append(topic)
    return out


def release_documents(folder: Path) -> list[tuple[int, Path]]:
    """(topic, XML file) of a release folder: ``folder/ECB+/<topic>/*.xml`` or ``folder/<topic>/*.xml``."""
    base = folder / "ECB+" if (folder / "ECB+").is_dir() else folder
    if not base.is_dir():
        raise InputError(folder, None, "is not a folder; give the unpacked ECB+ release (the folder holding ECB+/)")
    found = []
    for topic_dir in base.iterdir():
        if topic_dir.is_dir() and topic_dir.name.isdigit():
            found += [(int(topic_dir.name), f) for f in topic_dir.glob("*.xml")]
    if not found:
        raise InputError(base, None, "no <topic>/<document>.xml files found; give the unpacked ECB+ release "
                                     "(unzip ECB+.zip inside ECB+_LREC2014 first)")
    return sorted(found, key=lambda tf: (tf[0], tf[1].name))


def convert_release(folder: Path, output: Path, sentences_csv: Path | None = None,
                    keep_test_labels: bool = False) -> ConversionReport:
    """Write ``output`` (a labelled collection, JSONL) from an unpacked ECB+ 1.0 release."""
    folder = Path(folder)
    if sentences_csv is None:
        candidates = [folder / SENTENCES_CSV, folder.parent / SENTENCES_CSV]
        sentences_csv = next((c for c in candidates if c.is_file()), None)
        if sentences_csv is None:
            raise InputError(folder / SENTENCES_CSV, None, "not found; give its path with --sentences (it lists "
                                                            "the validated sentences of the release)")
    validated = read_validated(sentences_csv)
    report = ConversionReport()
    with atomic_write(output) as out:
        for topic, path in release_documents(folder):
            for passage in convert_document(path, topic, validated, report, keep_test_labels):
                out.write(json.dumps(passage, ensure_ascii=False) + "\n")
    return report
