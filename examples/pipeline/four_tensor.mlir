// The four-tensor term of the batching note (section 5) with extents, batched
// over b (outer) and c (inner) around the whole tree:
//   T1(b,c,d,f) = sum_{e,l} B(b,e,f,l) D(c,d,e,l)
//   T2(b,c,j,k) = sum_{d,f} T1(b,c,d,f) C(d,f,j,k)
//   S(a,b,i,j)  = sum_{c,k} T2(b,c,j,k) A(a,c,i,k)
// Run: xdsl-opt -p 'classify-axes,schedule-batches{report=table}' four_tensor.mlir
batch.forest @four_tensor {
  batch.space a extent 2 elem 8
  batch.space b extent 3 elem 8
  batch.space c extent 4 elem 8
  batch.space d extent 2 elem 8
  batch.space e extent 3 elem 8
  batch.space f extent 2 elem 8
  batch.space i extent 2 elem 8
  batch.space j extent 3 elem 8
  batch.space k extent 2 elem 8
  batch.space l extent 2 elem 8
  batch.value @B [b, e, f, l] leaf "B"
  batch.value @D [c, d, e, l] leaf "D"
  batch.value @C [d, f, j, k] leaf "C"
  batch.value @A [a, c, i, k] leaf "A"
  batch.value @T1 [b, c, d, f] contracted [e, l] = @B [b, e, f, l] * @D [c, d, e, l]
  batch.value @T2 [b, c, j, k] contracted [d, f] = @T1 [b, c, d, f] * @C [d, f, j, k]
  batch.value @S [a, b, i, j] contracted [c, k] = @T2 [b, c, j, k] * @A [a, c, i, k]
  batch.tree @S_term {
    batch.loop b slot 0 {
      batch.loop c slot 1 {
        batch.use @S [a, b, i, j] {
          batch.use @T2 [b, c, j, k] {
            batch.use @T1 [b, c, d, f] {
              batch.use @B [b, e, f, l]
              batch.use @D [c, d, e, l]
            }
            batch.use @C [d, f, j, k]
          }
          batch.use @A [a, c, i, k]
        }
      }
    }
  }
}
