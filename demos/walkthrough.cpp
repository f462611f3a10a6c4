// walkthrough.cpp — `flashdemo walkthrough`: the lecture as a sequence of screens. Each screen is
// a few sentences saying what is about to happen, the flashdemo command that shows it, and that
// command's output at sizes where every number fits: at most 100 columns and 30 rows with the
// hint (step 1 shows two commands: the lecture's vector, then one whose max grows).
// On a terminal it waits for one key between screens, no Enter needed (ui/pager.hpp): Enter,
// space, n or right arrow go on; b or left arrow go back; q, Esc or Ctrl-D quit; Ctrl-C quits
// with exit code 130; other keys only show the full list. Quitting clears the hint line and
// leaves the cursor on a fresh line; the terminal's settings come back on every way out.
#include "walkthrough.hpp"

#include <fmt/core.h>
#include <unistd.h>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "backward.hpp"
#include "forward.hpp"
#include "memory.hpp"
#include "softmax.hpp"
#include "ui/keys.hpp"
#include "ui/output.hpp"
#include "ui/pager.hpp"

namespace fd::demos {
namespace {

using ui::Msg;

enum class Section { softmax, forward, backward, memory };

struct Step {
  Section section;
  Msg narration;
  std::string command;  // what a student types to see the same thing
  std::function<void()> run;
};

struct WalkOptions {
  bool no_pause = false;
  std::optional<Section> section;
};

Parts only(bool problem, bool map, bool results, bool extra) {
  return Parts{false, problem, map, results, extra};
}

// The tiny problem most forward and backward screens use.
AttentionOptions tiny(index_t n, index_t m, index_t d, index_t Br, index_t Bc) {
  AttentionOptions o;
  o.n = n, o.m = m, o.d = d, o.Br = Br, o.Bc = Bc;
  return o;
}

// A command as a screen shows it: "  $ flashdemo ...".
void say_command(const std::string& command) {
  ui::say_raw("  " + ui::paint("$ " + command, ui::Paint::emphasis) + "\n");
}

// Step 1: the lecture's x has its max first, so it never rescales; a short x whose max grows,
// block by block, shows the rescale the narration asks the class to watch (its table only).
constexpr const char* kGrowing = "flashdemo softmax --values=1,3,2,6,0,8 --block 2";

std::vector<Step> softmax_steps() {
  return {
      {Section::softmax, Msg::walk_softmax_1, "flashdemo softmax",
       [] {
         SoftmaxOptions o;
         o.parts = only(true, true, true, false);
         run_softmax(o);
         ui::say(Msg::walk_softmax_grows);
         say_command(kGrowing);
         SoftmaxOptions g;
         g.values = "1,3,2,6,0,8", g.block = 2, g.map_title = false;
         g.parts = only(false, true, false, false);
         run_softmax(g);
       }},
      {Section::softmax, Msg::walk_softmax_2, "flashdemo softmax",
       [] {
         SoftmaxOptions o;
         o.parts = only(true, false, false, true);
         run_softmax(o);
       }},
  };
}

std::vector<Step> forward_steps() {
  return {
      {Section::forward, Msg::walk_forward_1,
       "flashdemo forward --n 8 --d 4 --block-q 4 --block-k 4",
       [] {
         AttentionOptions o = tiny(8, 0, 4, 4, 4);
         o.parts = only(true, true, true, false);
         run_forward(o);
       }},
      {Section::forward, Msg::walk_forward_2,
       "flashdemo forward --n 4 --m 6 --d 2 --block-q 4 --block-k 3 --trace rows",
       [] {
         AttentionOptions o = tiny(4, 6, 2, 4, 3);
         o.trace = ui::TraceLevel::rows, o.parts = only(false, false, true, false);
         run_forward(o);
       }},
      {Section::forward, Msg::walk_forward_3,
       "flashdemo forward --n 8 --d 4 --block-q 2 --block-k 2 --causal",
       [] {
         AttentionOptions o = tiny(8, 0, 4, 2, 2);
         o.causal = true, o.parts = only(false, true, true, false);
         run_forward(o);
       }},
      {Section::forward, Msg::walk_forward_4,
       "flashdemo forward --n 8 --d 4 --block-q 4 --block-k 4 --causal --trace tiles",
       [] {
         AttentionOptions o = tiny(8, 0, 4, 4, 4);
         o.causal = true, o.trace = ui::TraceLevel::tiles;
         o.parts = only(false, false, true, false);
         run_forward(o);
       }},
  };
}

// The tiny problem of the backward screens, drawn as `flashdemo backward` draws it: afresh for
// a causal run, like the lecture's demo 3 (AttentionOptions::draw).
AttentionOptions tiny_backward() {
  AttentionOptions o = tiny(8, 0, 4, 4, 4);
  o.draws_per_mask = true;
  return o;
}

std::vector<Step> backward_steps() {
  return {
      {Section::backward, Msg::walk_backward_1,
       "flashdemo backward --n 8 --d 4 --block-q 4 --block-k 4",
       [] {
         AttentionOptions o = tiny_backward();
         o.parts = only(true, false, true, false);
         run_backward(o);
       }},
      {Section::backward, Msg::walk_backward_2,
       "flashdemo backward --n 8 --d 4 --block-q 4 --block-k 4 --causal --trace tiles",
       [] {
         AttentionOptions o = tiny_backward();
         o.causal = true, o.trace = ui::TraceLevel::tiles;
         o.parts = only(false, false, false, false);
         run_backward(o);
       }},
      {Section::backward, Msg::walk_backward_3,
       "flashdemo backward --n 8 --d 4 --block-q 4 --block-k 4",
       [] {
         AttentionOptions o = tiny_backward();
         o.trace = ui::TraceLevel::none, o.parts = only(false, false, false, true);
         run_backward(o);
       }},
  };
}

std::vector<Step> memory_steps() {
  return {
      {Section::memory, Msg::walk_memory_1, "flashdemo memory",
       [] {
         MemoryOptions o;
         o.parts = only(false, false, true, false), o.fusion = false;
         run_memory(o);
       }},
      {Section::memory, Msg::walk_memory_2, "flashdemo memory --n 4096,65536",
       [] {
         MemoryOptions o;
         o.n_list = "4096,65536", o.parts = only(false, false, false, true), o.fusion = false;
         run_memory(o);
       }},
      {Section::memory, Msg::walk_memory_3, "flashdemo memory --n 4096,65536",
       [] {
         MemoryOptions o;
         o.n_list = "4096,65536", o.parts = only(false, false, false, false);
         run_memory(o);
       }},
  };
}

std::vector<Step> all_steps() {
  std::vector<Step> steps;
  for (auto part : {softmax_steps(), forward_steps(), backward_steps(), memory_steps()})
    steps.insert(steps.end(), part.begin(), part.end());
  return steps;
}

const char* section_name(Section s) {
  switch (s) {
    case Section::softmax:
      return ui::text(Msg::walk_section_softmax);
    case Section::forward:
      return ui::text(Msg::walk_section_forward);
    case Section::backward:
      return ui::text(Msg::walk_section_backward);
    case Section::memory:
      return ui::text(Msg::walk_section_memory);
  }
  return "";
}

void show(const Step& step, std::size_t k, std::size_t total, bool clear) {
  if (clear) ui::out() << "\033[2J\033[H";
  const std::string title = ui::tr(Msg::walk_step, k + 1, total, section_name(step.section));
  ui::say_raw("\n" + ui::paint(fmt::format("{:─<98}", title), ui::Paint::heading) + "\n");
  ui::say(step.narration);
  ui::say_raw("\n");
  say_command(step.command);
  step.run();
  ui::out().flush();
}

bool wants_pause(const WalkOptions& o) {
  return !o.no_pause && ui::can_pause();
}

void run_walkthrough(const WalkOptions& o) {
  const std::vector<Step> steps = all_steps();
  std::optional<ui::RawKeys> keys;  // the terminal reads key by key until this goes
  if (wants_pause(o)) keys.emplace(STDIN_FILENO);
  const bool pause = keys && keys->active();
  ui::set_live(pause);  // a person reads it as it comes: no holding back
  std::size_t k = 0;
  while (o.section && k < steps.size() && steps[k].section != *o.section) ++k;
  while (k < steps.size()) {
    show(steps[k], k, steps.size(), pause);
    if (!ui::out()) return;  // stdout failed: app.cpp reports it, the terminal is put back
    if (!pause) {
      ++k;
      continue;
    }
    const ui::Key key = ui::wait_for_key(ui::text(Msg::walk_prompt), ui::text(Msg::walk_keys));
    if (key == ui::Key::quit || key == ui::Key::interrupt) ui::leave_pause();
    if (key == ui::Key::quit) return;
    if (key == ui::Key::interrupt) throw Interrupted{};
    k = key == ui::Key::back ? (k > 0 ? k - 1 : 0) : k + 1;
  }
  ui::say(Msg::walk_done);
}

}  // namespace

void setup_walkthrough(CLI::App& app) {
  auto o = std::make_shared<WalkOptions>();
  CLI::App* sub = app.add_subcommand("walkthrough", ui::tr(Msg::walk_help));
  sub->add_flag("--no-pause", o->no_pause, ui::tr(Msg::walk_opt_no_pause));
  add_choice<std::optional<Section>>(sub, "--section", o->section,
                                     {{"softmax", Section::softmax},
                                      {"forward", Section::forward},
                                      {"backward", Section::backward},
                                      {"memory", Section::memory}},
                                     ui::tr(Msg::walk_opt_section));
  sub->footer(ui::tr(Msg::walk_examples));
  sub->callback([o] { run_walkthrough(*o); });
}

}  // namespace fd::demos
