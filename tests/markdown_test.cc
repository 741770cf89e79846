// The tools' Markdown table cells (tools/markdown.h).
#include "tools/markdown.h"

#include <gtest/gtest.h>

namespace scalecast::tools {
namespace {

TEST(MarkdownCell, APipeInsideACellIsEscapedSoTheRowKeepsItsColumns) {
  // A source name quoting a table header, as the Megatron-DeepSpeed rebase source does.
  EXPECT_EQ(MarkdownCell("README (table 'Case | TFLOPs (per GPU)')"),
            "README (table 'Case \\| TFLOPs (per GPU)')");
  EXPECT_EQ(MarkdownCell("two\nlines\r\n"), "two lines  ");
  EXPECT_EQ(MarkdownCell("plain"), "plain");
  EXPECT_EQ(MarkdownCell(""), "");
}

}  // namespace
}  // namespace scalecast::tools
