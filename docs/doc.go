// Package docs holds npuverify's user documentation as Markdown: the CLI
// reference, the accuracy model and policies, the golden store format, the
// exec backend protocol and how to add an operator (start at README.md).
// It has no code; its test keeps the pages' links working and the tree
// free of references to documents users never see.
package docs
