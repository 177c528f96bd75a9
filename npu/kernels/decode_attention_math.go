package kernels

// A core's per-head arithmetic for decode_attention: the scores of a
// tile, the partition's softmax, the running fold of partitions (the
// flash-decoding rescale) and the weighted sum of V.

import "math"

// partSoftmax turns query head h's m scores of the partition into
// exp(s − m_p), leaving the partition's maximum in w.mp[h] and the sum of
// the exponentials in w.zp[h].
func (w *daCore) partSoftmax(f decodeAttentionFaults, h, m int) {
	sc := w.sc[h][:m]
	mp := float32(math.Inf(-1))
	for _, s := range sc {
		mp = max(mp, s)
	}
	mp = f.maxSubtracted(mp)
	var zp float32
	for j, s := range sc {
		e := float32(math.Exp(float64(s - mp)))
		sc[j] = e
		zp += e
	}
	w.mp[h], w.zp[h] = mp, zp
}

// fold folds one partition's (or piece's) maximum mp, sum zp and
// numerator np into query head h's running M, Z and N: the flash-decoding
// combine, the same arithmetic whichever core computed the partition.
func (w *daCore) fold(f decodeAttentionFaults, h int, mp, zp float32, np []float32) {
	a, bsc := w.foldScalars(f, h, mp, zp)
	daFoldN(w.nacc[h][:len(np)], np, a, bsc)
}

// foldScalars folds a partition's mp and zp into query head h's running
// M and Z and returns the factors N and N_p are rescaled by: exp(M − M′)
// (0 while M is −∞: nothing folded yet) and exp(m_p − M′).
func (w *daCore) foldScalars(f decodeAttentionFaults, h int, mp, zp float32) (a, bsc float32) {
	mNew := f.maxSubtracted(max(w.mRun[h], mp))
	a, bsc = f.rescale(float32(math.Exp(float64(w.mRun[h]-mNew))), float32(math.Exp(float64(mp-mNew))))
	if w.mRun[h] == float32(math.Inf(-1)) {
		a = 0
	}
	w.zRun[h] = float32(w.zRun[h]*a) + float32(zp*bsc)
	w.mRun[h] = mNew
	return a, bsc
}

// daFoldN sets nacc ← RN32(nacc·a) + RN32(np·bsc), element by element.
func daFoldN(nacc, np []float32, a, bsc float32) {
	nacc = nacc[:len(np)]
	for i, v := range np {
		nacc[i] = float32(nacc[i]*a) + float32(v*bsc)
	}
}

// daScores adds q_h · k_j over columns [d0, d0+wd) to the scores
// sc[h][off+j] of every query head h (q holds them, qld values each) and
// every row j of the tile k (wd values each): fp32 products summed i
// ascending in one fp32 accumulator per score, as the cube's accumulator
// does, starting from 0 on the first D chunk and from the chunk before's
// sum otherwise, scaled by sigma after the last. Four keys share each
// pass over a query head, and the four keys' rows stay in cache across all
// heads.
func daScores(sc [][]float32, off int, q []float32, qld, d0 int, k []float32, wd int, sigma float32, first, last bool) {
	if wd == 0 {
		return
	}
	n := len(k) / wd
	j := 0
	for ; j+4 <= n; j += 4 {
		k0 := k[j*wd : (j+1)*wd]
		k1 := k[(j+1)*wd : (j+2)*wd]
		k2 := k[(j+2)*wd : (j+3)*wd]
		k3 := k[(j+3)*wd : (j+4)*wd]
		for h, s := range sc {
			qr := q[h*qld+d0 : h*qld+d0+wd]
			k0, k1, k2, k3 := k0[:len(qr)], k1[:len(qr)], k2[:len(qr)], k3[:len(qr)]
			o := s[off+j : off+j+4]
			var a0, a1, a2, a3 float32
			if !first {
				a0, a1, a2, a3 = o[0], o[1], o[2], o[3]
			}
			for i, qv := range qr {
				a0 += float32(qv * k0[i])
				a1 += float32(qv * k1[i])
				a2 += float32(qv * k2[i])
				a3 += float32(qv * k3[i])
			}
			if last {
				o[0], o[1], o[2], o[3] = a0*sigma, a1*sigma, a2*sigma, a3*sigma
			} else {
				o[0], o[1], o[2], o[3] = a0, a1, a2, a3
			}
		}
	}
	for ; j < n; j++ {
		kr := k[j*wd : (j+1)*wd]
		for h, s := range sc {
			qr := q[h*qld+d0 : h*qld+d0+wd]
			kr := kr[:len(qr)]
			var acc float32
			if !first {
				acc = s[off+j]
			}
			for i, qv := range qr {
				acc += float32(qv * kr[i])
			}
			if last {
				acc *= sigma
			}
			s[off+j] = acc
		}
	}
}

// daWeightedSum adds Σ_j e_j·v_j over the rows j of the tile v to each
// query head's partition numerator np[h], with e_j = sc[h][off+j]: fp32
// products added to each element in row order (j ascending), four rows
// per pass.
func daWeightedSum(np, sc [][]float32, off int, v []float32) {
	if len(np) == 0 {
		return
	}
	d := len(np[0])
	n := len(v) / d
	j := 0
	for ; j+4 <= n; j += 4 {
		v0 := v[j*d : (j+1)*d]
		v1 := v[(j+1)*d : (j+2)*d]
		v2 := v[(j+2)*d : (j+3)*d]
		v3 := v[(j+3)*d : (j+4)*d]
		for h, acc := range np {
			e := sc[h][off+j : off+j+4]
			e0, e1, e2, e3 := e[0], e[1], e[2], e[3]
			v0, v1, v2, v3 := v0[:len(acc)], v1[:len(acc)], v2[:len(acc)], v3[:len(acc)]
			for i, a := range acc {
				a = float32(a + float32(e0*v0[i]))
				a = float32(a + float32(e1*v1[i]))
				a = float32(a + float32(e2*v2[i]))
				acc[i] = float32(a + float32(e3*v3[i]))
			}
		}
	}
	for ; j < n; j++ {
		vr := v[j*d : (j+1)*d]
		for h, acc := range np {
			e := sc[h][off+j]
			vr := vr[:len(acc)]
			for i := range acc {
				acc[i] += float32(e * vr[i])
			}
		}
	}
}
