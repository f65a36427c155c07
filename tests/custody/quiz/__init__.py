"""Quiz: a made-up third benchmark family, written entirely inside its own test package and conf.

Nothing outside tests/custody/quiz/ is edited for it: the generic layers (schema, executor, custody's
gate, manifest, card and inventory frames, the report page) take every Quiz fact from its family
object (:mod:`tests.custody.quiz.family`, built from conf/benchmark/quiz.yaml).
"""
