// Package modelstest holds the tests that compile and exercise the code
// protoc-gen-kvdescriptor generated for the shipped models (generated/):
// key round trips and fuzz targets of the key builders and parsers,
// validation, dependencies, derived values, comparators, the scheduler
// driving generated descriptors end to end, and the measurement of how
// short the handlers a plugin author writes are. It has no code of its own.
package modelstest
