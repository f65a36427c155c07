"""Large synthetic haystacks for benchmarks (tests/bench/run.py): S-scale is 500 questions × 48 sessions.

Built by the same machinery as the bundled sample, with longer sessions (4–6 exchanges, about 10
turns) and exactly ``sessions_per_haystack`` sessions per question. Question types cycle in the
generator's order; about 6% are abstentions (where the type allows), half of the temporal and
multi-session ids get "gpt4_", 15% carry the same-day date quirk. Lazy: one instance at a time.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

from mnemetric.longmemeval.instance import Instance
from mnemetric.errors import ConfigError
from mnemetric.longmemeval.sample.banks import load_banks
from mnemetric.longmemeval.sample.haystack import Profile, Spec, build_instance
from mnemetric.longmemeval.sample.questions import GPT4_TYPES, QUESTION_TYPES, default_scenarios

MIN_SESSIONS = 4


def synthetic_profile(sessions_per_haystack: int) -> Profile:
    s = sessions_per_haystack
    return Profile(sessions=(s, s), exchanges=(4, 5, 5, 5, 6), span_days=(max(24, s // 2), max(40, s)), max_turns=13)


def synthetic_spec(rng: random.Random, index: int) -> Spec:
    qtype = QUESTION_TYPES[index % len(QUESTION_TYPES)]
    scenarios = default_scenarios()[qtype]
    abstain = rng.random() < 0.06 and any(s.abstains for s in scenarios)
    scenario = rng.choice([s for s in scenarios if s.abstains or not abstain])
    gpt4 = qtype in GPT4_TYPES and rng.random() < 0.5
    return Spec(qtype, scenario, abstain, gpt4, rng.random() < 0.15)


def generate_synthetic(n_questions: int, sessions_per_haystack: int, seed: int) -> Iterator[Instance]:
    """Yield ``n_questions`` instances of exactly ``sessions_per_haystack`` sessions each, lazily.

    Raises ConfigError before yielding anything when a count is out of range."""
    if n_questions < 0:
        raise ConfigError("--synthetic", f"must be 0 or more questions, got {n_questions}")
    if sessions_per_haystack < MIN_SESSIONS:
        raise ConfigError("--sessions", f"must be at least {MIN_SESSIONS} sessions per haystack "
                          f"(answer sessions plus fillers), got {sessions_per_haystack}")
    return _synthetic(n_questions, synthetic_profile(sessions_per_haystack), seed)


def _synthetic(n_questions: int, profile: Profile, seed: int) -> Iterator[Instance]:
    banks = load_banks()
    master = random.Random(seed)
    used: set[str] = set()
    for index in range(n_questions):
        spec = synthetic_spec(master, index)
        yield build_instance(random.Random(master.getrandbits(64)), banks, spec, profile, used)
