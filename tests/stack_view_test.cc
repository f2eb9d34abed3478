// --view: which frames of resolved samples the runtime view keeps, and that
// the one ProfileBuilder every output is written from applies it.
#include "agent/output/stack_view.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "agent/output/interned_profile.h"
#include "agent/output/output_folded.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

ResolvedFrame Native(const std::string& symbol, bool inlined = false) {
  ResolvedFrame f;
  f.symbol = symbol;
  f.dso = "/usr/lib/libx.so";
  f.addr = std::hash<std::string>()(symbol) & 0xffffff;
  f.inlined = inlined;
  return f;
}
ResolvedFrame Kernel(const std::string& symbol) {
  ResolvedFrame f = Native(symbol);
  f.dso = "[kernel.kallsyms]";
  f.kernel = true;
  return f;
}
ResolvedFrame Runtime(FrameRuntime runtime, const std::string& symbol, bool inlined = false) {
  ResolvedFrame f;
  f.symbol = symbol;
  f.runtime = runtime;
  f.dso = runtime == FrameRuntime::kPython ? "app.py" : runtime == FrameRuntime::kJava ? "[java]" : "app.js";
  f.inlined = inlined;
  return f;
}
ResolvedFrame Py(const std::string& s) { return Runtime(FrameRuntime::kPython, s); }
ResolvedFrame Java(const std::string& s, bool inlined = false) { return Runtime(FrameRuntime::kJava, s, inlined); }
ResolvedFrame Js(const std::string& s) { return Runtime(FrameRuntime::kJavaScript, s); }

// The symbols `view` shows, leaf first, joined by spaces.
std::string Shown(const std::vector<ResolvedFrame>& frames, StackView view) {
  std::vector<std::string> names;
  for (const ResolvedFrame* f : ShownFrames(frames, view)) names.push_back(f->symbol);
  return absl::StrJoin(names, " ");
}

// As bpf/python.bpf.h and AppendUserFrames order them: each eval call's
// frames leaf-side of its _PyEval_EvalFrameDefault, under the calls
// inlined into it; a C function (sorted) calling back into Python.
TEST(StackView, PythonGlueBetweenPythonFramesGoesTheRestStays) {
  const std::vector<ResolvedFrame> frames = {
      Kernel("do_syscall_64"), Native("list_sort_impl"), Native("unicode_compare", true),
      Py("sort_key"), Native("_PyEval_EvalFrameDefault"), Native("_PyObject_Call"),
      Native("builtin_sorted"), Native("cfunction_vectorcall", true), Py("run_sorted"), Py("main"),
      Native("_PyEval_EvalFrameDefault"), Native("PyEval_EvalCode"), Native("Py_RunMain"),
      Native("__libc_start_main"), Native("_start")};
  EXPECT_EQ(Shown(frames, StackView::kFull),
            "do_syscall_64 list_sort_impl unicode_compare sort_key _PyEval_EvalFrameDefault _PyObject_Call "
            "builtin_sorted cfunction_vectorcall run_sorted main _PyEval_EvalFrameDefault PyEval_EvalCode "
            "Py_RunMain __libc_start_main _start");
  // The kernel and C code the innermost function runs stay (its time), and
  // the interpreter's start rootward of the outermost.
  EXPECT_EQ(Shown(frames, StackView::kRuntime),
            "do_syscall_64 list_sort_impl unicode_compare sort_key run_sorted main _PyEval_EvalFrameDefault "
            "PyEval_EvalCode Py_RunMain __libc_start_main _start");
}

TEST(StackView, RecursionLosesEveryEvalLoopBetweenItsCalls) {
  std::vector<ResolvedFrame> frames = {Native("long_add")};
  for (int i = 0; i < 50; ++i) {
    frames.push_back(Py("recurse"));
    frames.push_back(Native("_PyEval_EvalFrameDefault"));
    frames.push_back(Native("_PyFunction_Vectorcall"));
  }
  frames.push_back(Native("_start"));
  const std::vector<const ResolvedFrame*> shown = ShownFrames(frames, StackView::kRuntime);
  // long_add, 50 recurse, the last call's two native frames, _start.
  ASSERT_EQ(shown.size(), 1u + 50 + 2 + 1);
  for (int i = 1; i <= 50; ++i) EXPECT_EQ(shown[i]->symbol, "recurse") << i;
  EXPECT_EQ(shown[51]->symbol, "_PyEval_EvalFrameDefault");
  EXPECT_EQ(shown.back()->symbol, "_start");
}

TEST(StackView, JavaStubsAndInlinedMethods) {
  const std::vector<ResolvedFrame> frames = {
      Java("Hot.leaf"), Java("Hot.inlinedCaller", /*inlined=*/true), Java("Hot.compiled"),
      Native("Interpreter"), Native("call_stub"), Java("Main.loop"), Java("Main.main"),
      Native("JavaCalls::call_helper"), Native("JavaMain"), Native("start_thread"), Native("clone3")};
  EXPECT_EQ(Shown(frames, StackView::kRuntime),
            "Hot.leaf Hot.inlinedCaller Hot.compiled Main.loop Main.main JavaCalls::call_helper JavaMain "
            "start_thread clone3");
}

TEST(StackView, JavaScriptWithItsJitCodeAtTheLeaf) {
  ResolvedFrame jit = Native("LazyCompile:*work app.js:3");
  jit.jit = true;
  const std::vector<ResolvedFrame> frames = {jit, Js("work"), Native("Builtins_InterpreterEntryTrampoline"),
                                             Native("Builtins_JSEntry"), Js("main"),
                                             Native("v8::internal::Execution::Call"), Native("node::Start")};
  EXPECT_EQ(Shown(frames, StackView::kRuntime),
            "LazyCompile:*work app.js:3 work main v8::internal::Execution::Call node::Start");
}

TEST(StackView, ARuntimeFrameAtTheLeafAndNoneAtAll) {
  const std::vector<ResolvedFrame> leaf = {Py("spin"), Native("_PyEval_EvalFrameDefault"), Py("main"),
                                           Native("_PyEval_EvalFrameDefault"), Native("_start")};
  EXPECT_EQ(Shown(leaf, StackView::kRuntime), "spin main _PyEval_EvalFrameDefault _start");
  const std::vector<ResolvedFrame> native = {Kernel("schedule"), Native("poll"), Native("main"), Native("_start")};
  EXPECT_EQ(Shown(native, StackView::kRuntime), "schedule poll main _start");
  EXPECT_EQ(Shown({}, StackView::kRuntime), "");
  const std::vector<ResolvedFrame> one = {Native("memcpy"), Py("copy"), Native("_start")};
  EXPECT_EQ(Shown(one, StackView::kRuntime), "memcpy copy _start");
}

// Native frames between frames of two runtimes are the bridge from one to
// the other (JNI, an embedded interpreter): they stay; only the natives
// between two neighbouring runtime frames of one runtime go.
TEST(StackView, FramesOfTwoRuntimes) {
  const std::vector<ResolvedFrame> frames = {
      Py("callback"), Native("_PyEval_EvalFrameDefault"), Native("PyObject_Call"), Native("jni_bridge"),
      Java("Bridge.call"), Native("Interpreter"), Java("Bridge.outer"), Native("JNI_CallVoidMethod"),
      Native("ext_dispatch"), Py("dispatch"), Native("_PyEval_EvalFrameDefault"), Py("main"),
      Native("_start")};
  EXPECT_EQ(Shown(frames, StackView::kRuntime),
            "callback _PyEval_EvalFrameDefault PyObject_Call jni_bridge Bridge.call Bridge.outer "
            "JNI_CallVoidMethod ext_dispatch dispatch main _start");
}

// Every output is written from ProfileBuilder's model: the view applied
// there is what folded, SVG, pprof, perf script and text show. Two
// stacks the runtime view makes equal are one.
TEST(StackView, ProfileBuilderMergesWhatTheViewMakesEqual) {
  ResolvedSample a;
  a.comm = "python3";
  a.frames = {Py("leaf"), Native("_PyEval_EvalFrameDefault"), Native("method_vectorcall"), Py("main"),
              Native("_start")};
  ResolvedSample b = a;
  b.frames[2] = Native("_PyObject_Call");
  for (StackView view : {StackView::kFull, StackView::kRuntime}) {
    ProfileBuilder builder(/*keep_events=*/true, view);
    builder.Add(a);
    builder.Add(b);
    const InternedProfile p = builder.Take();
    std::ostringstream folded;
    ASSERT_TRUE(WriteFolded(p, folded).ok());
    if (view == StackView::kFull) {
      EXPECT_EQ(p.samples.size(), 2u);
      EXPECT_EQ(folded.str(),
                "python3;_start;main;_PyObject_Call;_PyEval_EvalFrameDefault;leaf 1\n"
                "python3;_start;main;method_vectorcall;_PyEval_EvalFrameDefault;leaf 1\n");
    } else {
      EXPECT_EQ(p.samples.size(), 1u);
      EXPECT_EQ(p.events.size(), 2u);
      EXPECT_EQ(folded.str(), "python3;_start;main;leaf 2\n");
    }
  }
}

// A runtime added to FrameRuntime later (Ruby, PHP) needs no change here:
// frames are told apart by the enum's value alone.
TEST(StackView, ARuntimeNotYetInTheEnum) {
  const auto later = static_cast<FrameRuntime>(static_cast<uint8_t>(FrameRuntime::kJavaScript) + 7);
  const std::vector<ResolvedFrame> frames = {Native("rb_ary_sort"), Runtime(later, "Sorter#key"),
                                             Native("vm_exec_core"), Native("rb_yield"),
                                             Runtime(later, "Sorter#run"), Native("ruby_run_node")};
  EXPECT_EQ(Shown(frames, StackView::kRuntime), "rb_ary_sort Sorter#key Sorter#run ruby_run_node");
}

TEST(StackView, NamesAsTheOptionAndLabelsSpellThem) {
  EXPECT_EQ(ParseStackView("runtime"), StackView::kRuntime);
  EXPECT_EQ(ParseStackView("full"), StackView::kFull);
  EXPECT_EQ(ParseStackView("Runtime"), std::nullopt);
  EXPECT_EQ(StackViewName(StackView::kRuntime), "runtime");
  EXPECT_EQ(StackViewName(StackView::kFull), "full");
}

}  // namespace
}  // namespace ehprof
