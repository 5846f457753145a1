"""Identifiers a reader cannot tell apart: confusable skeletons, invisible characters, mixed scripts.

A small stand-in for Unicode Technical Standard #39 (Unicode Security Mechanisms), built from the
standard library's :mod:`unicodedata` and two documented tables, without a new dependency:

* :func:`skeleton` maps an id to the form two look-alike ids share: NFKC (compatibility forms:
  full-width ``Ｐ１`` is ``P1``), then every default-ignorable code point removed
  (:data:`DEFAULT_IGNORABLE`: zero-width space and joiners, soft hyphen, bidirectional marks,
  variation selectors, the byte-order mark, tag characters, ...), then each character of
  :data:`HOMOGLYPHS` replaced by the Latin letter or digit it looks like (Cyrillic and Greek
  letters that are drawn as Latin ones, ``0``/``O``, ``1``/``l``/``I``), then case folded.
  UTS #39's own table (``confusables.txt``, about 6,000 entries) maps far more; this one covers
  the homoglyphs of the scripts a study's ids are typed in (ids are file names and puzzle ids)
  and is checked against the characters' Unicode names by the tests.
* :func:`invisible_characters` lists the default-ignorable and other format (``Cf``) or
  control characters of an id: an id that holds one looks like another without it.
* :func:`scripts` / :func:`mixed_scripts`: the scripts of an id's letters, from their Unicode
  names (``CYRILLIC SMALL LETTER A``: Cyrillic); an id mixing scripts is suspicious (UTS #39's
  "highly restrictive" level allows Latin with Han and Japanese kana, Bopomofo or Hangul only).
"""

from __future__ import annotations

import unicodedata

#: the Default_Ignorable_Code_Point ranges of Unicode's DerivedCoreProperties.txt (Unicode 15):
#: characters that are drawn as nothing
DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)


def is_default_ignorable(ch: str) -> bool:
    """Return True when the character ``ch`` is a default-ignorable code point (drawn as
    nothing; :data:`DEFAULT_IGNORABLE`)."""
    o = ord(ch)
    return any(lo <= o <= hi for lo, hi in DEFAULT_IGNORABLE)


#: characters of other scripts drawn as a Latin letter (or digits drawn as letters), each with
#: the character it is taken for (UTS #39 confusables.txt, the entries for Cyrillic, Greek and
#: Armenian letters and the digit/letter pairs)
HOMOGLYPHS: dict[str, str] = {
    # Cyrillic
    "\u0430": "a", "\u0410": "A", "\u0412": "B", "\u0435": "e", "\u0415": "E",
    "\u041a": "K", "\u043a": "k", "\u041c": "M", "\u041d": "H", "\u043e": "o",
    "\u041e": "O", "\u0440": "p", "\u0420": "P", "\u0441": "c", "\u0421": "C",
    "\u0422": "T", "\u0443": "y", "\u0423": "Y", "\u0445": "x", "\u0425": "X",
    "\u0455": "s", "\u0405": "S", "\u0456": "i", "\u0406": "I", "\u0458": "j",
    "\u0408": "J", "\u0501": "d", "\u051b": "q", "\u051a": "Q", "\u051d": "w",
    "\u051c": "W", "\u04bb": "h", "\u04c0": "l", "\u04cf": "l", "\u0457": "\u00ef",
    # Greek
    "\u03b1": "a", "\u0391": "A", "\u0392": "B", "\u0395": "E", "\u0396": "Z",
    "\u0397": "H", "\u0399": "I", "\u03b9": "i", "\u039a": "K", "\u03ba": "k",
    "\u039c": "M", "\u039d": "N", "\u03bd": "v", "\u039f": "O", "\u03bf": "o",
    "\u03a1": "P", "\u03c1": "p", "\u03a4": "T", "\u03a5": "Y", "\u03c5": "u",
    "\u03a7": "X", "\u03c7": "x",
    # Armenian
    "\u0585": "o", "\u057d": "u", "\u0578": "n", "\u0570": "h", "\u0566": "q",
    # digits and letters drawn alike
    "0": "O", "1": "l", "I": "l", "|": "l",
}  # fmt: skip


def skeleton(text: str) -> str:
    """Return the confusable skeleton of ``text`` (module docstring): two ids with the same
    skeleton look the same to a reader (``Bing-р1`` with a Cyrillic ``р``, ``Bing-pl``)."""
    s = unicodedata.normalize("NFKC", text)
    s = "".join(HOMOGLYPHS.get(ch, ch) for ch in s if not is_default_ignorable(ch))
    return unicodedata.normalize("NFKC", s).casefold()


def skeletons(text: str) -> tuple[str, str]:
    """Return the two skeletons of ``text`` under which look-alike ids meet: :func:`skeleton`
    (homoglyphs of each case: ``I`` like ``l``) and the skeleton of its case-folded form
    (``ＢＩＮＧ`` like ``Bing``: letter case does not make two ids look different)."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return skeleton(text), skeleton(folded)


def invisible_characters(text: str) -> list[str]:
    """Return ``U+XXXX NAME`` for each character of ``text`` a reader cannot see: default
    ignorable, another format character (``Cf``) or a control character (``Cc``), in order
    (each once)."""
    out: list[str] = []
    for ch in text:
        if is_default_ignorable(ch) or unicodedata.category(ch) in ("Cf", "Cc"):
            name = unicodedata.name(ch, "") or "control character"
            label = f"U+{ord(ch):04X} {name}"
            if label not in out:
                out.append(label)
    return out


#: first words of character names that are not a script's name
_NAME_SCRIPTS = {"CJK": "Han", "HANGUL": "Hangul", "FULLWIDTH": "", "HALFWIDTH": ""}


def _script(ch: str) -> str | None:
    """Return the script of letter ``ch`` from its Unicode name (None for a non-letter:
    digits, punctuation and marks belong to every script)."""
    if not unicodedata.category(ch).startswith("L"):
        return None
    name = unicodedata.name(unicodedata.normalize("NFKC", ch)[:1] or ch, "")
    if not name:
        return None
    word = name.split()[0]
    script = _NAME_SCRIPTS.get(word, word.title())
    if not script:  # full-width forms: the script of what they stand for
        script = name.split()[1].title()
    return script


def scripts(text: str) -> set[str]:
    """Return the scripts of the letters of ``text`` (``{"Latin", "Cyrillic"}``)."""
    return {s for s in map(_script, text) if s is not None}


#: script sets UTS #39's "highly restrictive" level allows in one identifier (beyond one script)
_ALLOWED_MIXES = (
    {"Latin", "Han", "Hiragana", "Katakana"},
    {"Latin", "Han", "Bopomofo"},
    {"Latin", "Han", "Hangul"},
)


def mixed_scripts(text: str) -> set[str]:
    """Return the scripts of ``text`` when it mixes scripts in a way UTS #39's highly
    restrictive level does not allow (``{"Latin", "Cyrillic"}``), else the empty set."""
    found = scripts(text)
    if len(found) < 2 or any(found <= allowed for allowed in _ALLOWED_MIXES):
        return set()
    return found


__all__ = [
    "DEFAULT_IGNORABLE",
    "HOMOGLYPHS",
    "invisible_characters",
    "is_default_ignorable",
    "mixed_scripts",
    "scripts",
    "skeleton",
    "skeletons",
]
