# SPDX-License-Identifier: Apache-2.0
"""Korean particles after a value: 이/가, 을/를, 은/는, 과/와, 으로/로 are chosen by the final
sound of what precedes them, and a template cannot know it before the value is filled in
(``랭크 {rank}가`` reads ``랭크 18가``, wrong: 18 is 십팔, it ends in a consonant). A Korean
template writes either form (or ``이(가)``) right after a ``{field}``; ``render`` fills the
fields and puts the particle that fits the value as it is read aloud: digits as Sino-Korean
numbers (18 -> 팔: consonant; 2 -> 이: vowel; any number ending in 0 -> 십/백/천/만/영:
consonant), Latin letters by their English names (L, M, N, R end in a consonant; 엘 and 알 in
ㄹ), Hangul by its own final. A value whose end cannot be read (``?``, punctuation only) keeps
the double form, ``이(가)``."""

import re

# particle -> (after a final consonant, after a vowel); 으로/로: after ㄹ it is 로 (see _pick)
_PAIRS = (("이(가)", "이", "가"), ("을(를)", "을", "를"), ("은(는)", "은", "는"), ("과(와)", "과", "와"),
          ("와(과)", "과", "와"), ("(으)로", "으로", "로"),
          ("가", "이", "가"), ("이", "이", "가"), ("를", "을", "를"), ("을", "을", "를"), ("는", "은", "는"),
          ("은", "은", "는"), ("와", "과", "와"), ("과", "과", "와"), ("으로", "으로", "로"), ("로", "으로", "로"))
_BY_FORM = dict((form, (after_consonant, after_vowel)) for form, after_consonant, after_vowel in _PAIRS)
_DOUBLE = {"이": "이(가)", "가": "이(가)", "을": "을(를)", "를": "을(를)", "은": "은(는)", "는": "은(는)",
           "과": "과(와)", "와": "과(와)", "으로": "(으)로", "로": "(으)로"}
# a particle right after a field, not the start of a longer word ('{n}개', '{x}이다' are no particles)
_FIELD_PARTICLE = re.compile(r"\{(\w+)\}(" + "|".join(re.escape(f) for f, _c, _v in _PAIRS) + r")(?![가-힣])")
# the digits as Sino-Korean numbers: which end in a consonant, and which in ㄹ (일, 칠, 팔)
_DIGIT_FINAL = {"0": "ㅇ", "1": "ㄹ", "2": "", "3": "ㅁ", "4": "", "5": "", "6": "ㄱ", "7": "ㄹ", "8": "ㄹ", "9": ""}
_LETTER_FINAL = {"l": "ㄹ", "m": "ㅁ", "n": "ㄴ", "r": "ㄹ"}


def final_sound(value):
    """The final consonant the end of ``value`` is read with: '' after a vowel, 'ㄹ', another
    consonant's letter, or None when it cannot be told."""
    s = str(value).rstrip(" \t)]}'\"`.,;:!")
    if not s:
        return None
    c = s[-1]
    if "가" <= c <= "힣":
        final = (ord(c) - 0xAC00) % 28
        return "" if final == 0 else ("ㄹ" if final == 8 else "ㅇ")
    if c.isdigit():
        digits = re.search(r"\d+$", s).group(0)
        if c == "0" and len(digits) > 1 and digits.strip("0"):
            return "ㄴ"  # 십, 백, 천, 만: a round number ends in a consonant (none in ㄹ)
        return _DIGIT_FINAL[c]
    if c.isascii() and c.isalpha():
        return _LETTER_FINAL.get(c.lower(), "")
    return None


def particle(value, form):
    """The particle of ``form`` (either form of a pair, or the double '이(가)') after ``value``."""
    pair = _BY_FORM.get(form)
    if pair is None:
        return form
    final = final_sound(value)
    if final is None:
        return _DOUBLE.get(pair[1], form)
    if pair[0] == "으로":
        return "로" if final in ("", "ㄹ") else "으로"
    return pair[1] if final == "" else pair[0]


def render(template, fields):
    """``template.format_map(fields)`` with each particle right after a field chosen for the
    value that field gets."""
    def fix(m):
        try:
            value = fields[m.group(1)]
        except (KeyError, LookupError):
            return m.group(0)
        return "{%s}%s" % (m.group(1), particle(value, m.group(2)))
    return _FIELD_PARTICLE.sub(fix, template).format_map(fields)


def after(value, form):
    """``value`` followed by the particle of ``form`` that fits it ('Xid 79 (...)' + '이(가)')."""
    return "%s%s" % (value, particle(value, form))
