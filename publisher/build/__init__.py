"""The build: the core that makes, validates and swaps in a tree (``pipeline``), the incremental
layer that carries unchanged files from the live tree (``incremental``), the trees and their record
(``tree``), the forked workers (``workers``) and the engine that runs the endpoints' declared checks
(``validate``)."""
