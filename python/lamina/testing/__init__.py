"""Reference models and helpers shared by the demo, the tests and the benchmarks."""
