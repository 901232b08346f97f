// A{;i_3} * A{;i_4} (SeQuant legality_cross_iteration.txt), batched over i:
// one loop per occupied index, nested in label order, fused across trees by
// slot. The outer product V carries both i_3 and i_4; it is the tree's root,
// so it is assembled in full (LoopCarried, scattered block by block).
batch.forest @cross_iteration {
  batch.space i extent 4 elem 8
  batch.value @A [i_1] leaf "A"
  batch.value @V [i_1, i_2] = @A [i_1] * @A [i_2]
  batch.tree @term0 {
    batch.loop i_3 slot 0 {
      batch.loop i_4 slot 1 {
        batch.use @V [i_3, i_4] {
          batch.use @A [i_3]
          batch.use @A [i_4]
        }
      }
    }
  }
}
