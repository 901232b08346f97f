// xDSL's generic printer escapes a Unicode dictionary key byte by byte; the
// batch dialect reads that form too and prints the key readably.
// RUN: xdsl-opt %s | filecheck %s

batch.forest @escaped {
  batch.value @g [Κ_1] leaf "g" {note, roles = {"\CE\9A_1" = #batch.role<loop_local>}, why = {"\CE\9A_1" = "\CE\9A"}}
}
// CHECK:      batch.value @g [Κ_1] leaf "g" {note, roles = {"Κ_1" = #batch.role<loop_local>}, why = {"Κ_1" = "Κ"}}
