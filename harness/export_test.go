package harness

// CollectIfLarge is collectIfLarge, for the test of what it releases.
var CollectIfLarge = collectIfLarge
