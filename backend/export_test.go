package backend

// WorkersStarted is how many worker processes w (with its WithNumerics
// copies) has started: the tests hold the pool to reusing them.
func WorkersStarted(w *Worker) int { return int(w.pool.started.Load()) }
