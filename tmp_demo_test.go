package kilolock_test
import ("testing";"os";"context";"path/filepath";"github.com/kilolock/kilolock";"github.com/kilolock/kilolock/store/sqlite")
func BenchmarkTmpDemo(b *testing.B){
 warm,_:=os.ReadFile("/tmp/gen/demo-warm.json")
 tofu,_:=os.ReadFile("/tmp/gen/demo-tofu.json")
 for range b.N {
  b.StopTimer()
  st,err:=sqlite.Open(context.Background(), filepath.Join(b.TempDir(),"k.db")); if err!=nil {b.Fatal(err)}
  e:=kilolock.NewEngine(st, kilolock.Options{})
  if _,err:=e.Write(context.Background(),"m",warm,kilolock.WriteOptions{}); err!=nil {b.Fatal(err)}
  b.StartTimer()
  res,err:=e.Write(context.Background(),"m",tofu,kilolock.WriteOptions{}); if err!=nil {b.Fatal(err)}
  b.StopTimer()
  b.Logf("%+v", res.Version.Changed)
  st.Close()
 }
}
