package reference

// The layout conversions of transdata as index maps: for every element of
// the destination, in destination order, the index of the source element
// it holds, or −1 where it is padding (+0 by the contract). Each is the
// contract's formula walked coordinate by coordinate over the destination,
// with no tiling and no shared code with the kernel (a copy moves bits, so
// an index map is the whole truth: the caller moves the bit patterns).

// NCHWToNC1HWC0 maps NCHW [n,c,h,w] (or NHWC [n,h,w,c] when nhwc) to
// NC1HWC0 [n,c1,h,w,c0], c1 = ceil(c/c0): destination (i, c1, y, x, j)
// holds channel c1·c0 + j, padding where that is c or more.
func NCHWToNC1HWC0(n, c, h, w, c0 int, nhwc bool) []int {
	c1 := (c + c0 - 1) / c0
	out := make([]int, 0, n*c1*h*w*c0)
	for i := 0; i < n; i++ {
		for q := 0; q < c1; q++ {
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					for j := 0; j < c0; j++ {
						ch := q*c0 + j
						switch {
						case ch >= c:
							out = append(out, -1)
						case nhwc:
							out = append(out, ((i*h+y)*w+x)*c+ch)
						default:
							out = append(out, ((i*c+ch)*h+y)*w+x)
						}
					}
				}
			}
		}
	}
	return out
}

// NC1HWC0ToNCHW maps NC1HWC0 [n,c1,h,w,c0] back to NCHW [n,c,h,w] (NHWC
// [n,h,w,c] when nhwc), c the original channel count: channel ch is read
// from (ch / c0, ch mod c0). No destination element is padding, and no
// source padding lane (ch ≥ c) is ever named.
func NC1HWC0ToNCHW(n, c, h, w, c0 int, nhwc bool) []int {
	c1 := (c + c0 - 1) / c0
	src := func(i, ch, y, x int) int { return (((i*c1+ch/c0)*h+y)*w+x)*c0 + ch%c0 }
	out := make([]int, 0, n*c*h*w)
	for i := 0; i < n; i++ {
		if nhwc {
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					for ch := 0; ch < c; ch++ {
						out = append(out, src(i, ch, y, x))
					}
				}
			}
			continue
		}
		for ch := 0; ch < c; ch++ {
			for y := 0; y < h; y++ {
				for x := 0; x < w; x++ {
					out = append(out, src(i, ch, y, x))
				}
			}
		}
	}
	return out
}

// NDToNZ maps ND [batch,m,k] (batch the product of the leading dims) to
// FRACTAL_NZ [batch,k1,m1,16,c0], k1 = ceil(k/c0), m1 = ceil(m/16):
// destination (b, p, q, r, j) holds (m, k) = (16q + r, p·c0 + j), padding
// where m or k falls past the matrix.
func NDToNZ(batch, m, k, c0 int) []int {
	k1, m1 := (k+c0-1)/c0, (m+15)/16
	out := make([]int, 0, batch*k1*m1*16*c0)
	for b := 0; b < batch; b++ {
		for p := 0; p < k1; p++ {
			for q := 0; q < m1; q++ {
				for r := 0; r < 16; r++ {
					for j := 0; j < c0; j++ {
						row, col := 16*q+r, p*c0+j
						if row >= m || col >= k {
							out = append(out, -1)
							continue
						}
						out = append(out, (b*m+row)*k+col)
					}
				}
			}
		}
	}
	return out
}

// NZToND maps FRACTAL_NZ [batch,k1,m1,16,c0] back to ND [batch,m,k]:
// (m, k) is read from (k / c0, m / 16, m mod 16, k mod c0), never from a
// padding row or lane.
func NZToND(batch, m, k, c0 int) []int {
	k1, m1 := (k+c0-1)/c0, (m+15)/16
	out := make([]int, 0, batch*m*k)
	for b := 0; b < batch; b++ {
		for row := 0; row < m; row++ {
			for col := 0; col < k; col++ {
				out = append(out, (((b*k1+col/c0)*m1+row/16)*16+row%16)*c0+col%c0)
			}
		}
	}
	return out
}
