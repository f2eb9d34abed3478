// The interactive parts of the SVG flame graph: CSS and ECMAScript
// embedded in every file (no network access needed to view it).
#ifndef EHPROF_AGENT_OUTPUT_SVG_SCRIPT_H_
#define EHPROF_AGENT_OUTPUT_SVG_SCRIPT_H_

namespace ehprof {

// How to search, for the Search button's tooltip and the search prompt.
extern const char kSearchHelp[];
// <style> element, written inside <svg>.
extern const char kSvgStyle[];
// The script body, preceded by ScriptConstants' "var CW = ...;" lines.
extern const char kSvgScript[];

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_SVG_SCRIPT_H_
