"""LongMemEval-V2 (agent memory): upstream-exact scoring, aggregation, domain combination and LAFS.

Each module names the upstream file it reimplements (github.com/xiaowu0162/LongMemEval-V2 at
be15ea6e995462f3391c1a610892df3f67dfa7bd); no upstream code is copied. Import from the modules
(``mnemetric.longmemeval_v2.checkers`` …); this package re-exports nothing.
"""
