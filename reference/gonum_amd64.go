package reference

// gonumUnfused reports whether gonum's Dgemm adds each product as the
// plain loop does, rounded on its own and then added: on amd64 its inner
// axpy is gonum's SSE2 assembly (a multiply, then an add), whatever
// GOAMD64 says (unless gonum's own noasm tag is set). Elsewhere its axpy
// is Go code, which the compiler may fuse into one rounding (arm64 does),
// so MatMulInto takes the plain loop there.
const gonumUnfused = true
