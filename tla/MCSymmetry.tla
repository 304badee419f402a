----------------------------- MODULE MCSymmetry -----------------------------
(***************************************************************************)
(* MCDurableRaft with TLC's SYMMETRY, for the explorer's -symmetry         *)
(* (spec/symmetry.go): Server and Value must be sets of model values.      *)
(* ServerSymmetry is -symmetry servers, ServerValueSymmetry is             *)
(* -symmetry servers,values (the group the two compose to).  tla/          *)
(* tlc_test.go's TestTLCSymmetry writes the configs.                       *)
(***************************************************************************)
EXTENDS MCDurableRaft, TLC

ServerSymmetry      == Permutations(Server)
ServerValueSymmetry == Permutations(Server) \cup Permutations(Value)

=============================================================================
