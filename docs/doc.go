// Package docs holds no code: its tests check that the documentation in
// this directory and the repository's README.md do what they say. They
// follow the README's "Use it in your own repository" and the tutorial
// step by step in a fresh module, check that the annotation reference
// names every option of options.proto and nothing else, and that the log
// legend explains every word the scheduler prints.
package docs
