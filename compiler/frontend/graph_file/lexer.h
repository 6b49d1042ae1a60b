// Tokens of the kiln graph file (.kg). See docs/graph-file.md.
#pragma once

#include <string>
#include <vector>

namespace kiln::kg {

enum class Tok {
  Ident,
  String,
  Number,
  LParen,
  RParen,
  LBracket,
  RBracket,
  Comma,
  Equals,
  Colon,
  Newline,
  End
};

struct Token {
  Tok kind;
  std::string text;  // identifier, string contents, or the number as written
  int line = 0, col = 0;
};

const char* tok_name(Tok t);

// Splits `src` into tokens; comments (# to end of line) are dropped, newlines kept (statements
// end at a newline outside brackets/parentheses). Throws kiln::Error "file:line:col: ...".
std::vector<Token> lex(const std::string& src, const std::string& file);

}  // namespace kiln::kg
