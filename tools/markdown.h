// Writing GitHub-flavoured Markdown tables for the command-line tools.
#ifndef SCALECAST_TOOLS_MARKDOWN_H_
#define SCALECAST_TOOLS_MARKDOWN_H_

#include <string>

#include "absl/strings/string_view.h"

namespace scalecast::tools {

// `text` as one table cell: a pipe is escaped ("\|", GitHub's rule for a pipe inside a cell) and
// a line break becomes a space, so a source name that quotes a table ("'Case | TFLOPs'") stays
// one cell instead of shifting the rest of its row.
std::string MarkdownCell(absl::string_view text);

}  // namespace scalecast::tools

#endif  // SCALECAST_TOOLS_MARKDOWN_H_
