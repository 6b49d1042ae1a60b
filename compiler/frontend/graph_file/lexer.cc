#include "compiler/frontend/graph_file/lexer.h"

#include <cctype>

#include "compiler/support/error.h"

namespace kiln::kg {

const char* tok_name(Tok t) {
  switch (t) {
    case Tok::Ident:
      return "a name";
    case Tok::String:
      return "a string";
    case Tok::Number:
      return "a number";
    case Tok::LParen:
      return "'('";
    case Tok::RParen:
      return "')'";
    case Tok::LBracket:
      return "'['";
    case Tok::RBracket:
      return "']'";
    case Tok::Comma:
      return "','";
    case Tok::Equals:
      return "'='";
    case Tok::Colon:
      return "':'";
    case Tok::Newline:
      return "end of line";
    case Tok::End:
      return "end of file";
  }
  return "?";
}

std::vector<Token> lex(const std::string& s, const std::string& file) {
  std::vector<Token> out;
  int line = 1, col = 1;
  std::vector<Token> open;  // unclosed ( and [: inside them newlines do not end a statement
  size_t i = 0;
  auto err = [&](const std::string& what) {
    throw Error(str_cat(file, ":", line, ":", col, ": ", what));
  };
  auto advance = [&](size_t n) {
    for (size_t k = 0; k < n; ++k) {
      if (s[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
      ++i;
    }
  };
  while (i < s.size()) {
    char c = s[i];
    if (c == '#') {
      while (i < s.size() && s[i] != '\n') advance(1);
      continue;
    }
    if (c == '\n') {
      if (open.empty() && (out.empty() || out.back().kind != Tok::Newline))
        out.push_back({Tok::Newline, "", line, col});
      advance(1);
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(c))) {
      advance(1);
      continue;
    }
    Token t{Tok::End, "", line, col};
    auto single = [&](Tok k) {
      t.kind = k;
      t.text = std::string(1, c);
      advance(1);
      out.push_back(t);
    };
    switch (c) {
      case '(':
      case '[':
        single(c == '(' ? Tok::LParen : Tok::LBracket);
        open.push_back(out.back());
        continue;
      case ')':
      case ']':
        if (open.empty() || open.back().text[0] != (c == ')' ? '(' : '['))
          err(std::string("unbalanced '") + c + "'");
        open.pop_back();
        single(c == ')' ? Tok::RParen : Tok::RBracket);
        continue;
      case ',':
        single(Tok::Comma);
        continue;
      case '=':
        single(Tok::Equals);
        continue;
      case ':':
        single(Tok::Colon);
        continue;
      default:
        break;
    }
    if (c == '"') {
      advance(1);
      std::string v;
      while (i < s.size() && s[i] != '"') {
        if (s[i] == '\n') err("unterminated string");
        if (s[i] == '\\' && i + 1 < s.size()) {
          advance(1);
          v += s[i] == 'n' ? '\n' : s[i];
          advance(1);
          continue;
        }
        v += s[i];
        advance(1);
      }
      if (i >= s.size()) err("unterminated string");
      advance(1);
      t.kind = Tok::String;
      t.text = v;
      out.push_back(t);
      continue;
    }
    bool num_start = std::isdigit(static_cast<unsigned char>(c)) ||
                     ((c == '-' || c == '+' || c == '.') && i + 1 < s.size() &&
                      (std::isdigit(static_cast<unsigned char>(s[i + 1])) || s[i + 1] == '.' ||
                       s[i + 1] == 'i'));
    if (num_start) {
      size_t j = i;
      if (s[j] == '-' || s[j] == '+') ++j;
      if (s.compare(j, 3, "inf") == 0) {
        j += 3;
      } else {
        while (j < s.size() &&
               (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.' ||
                ((s[j] == '-' || s[j] == '+') && (s[j - 1] == 'e' || s[j - 1] == 'E'))))
          ++j;
      }
      t.kind = Tok::Number;
      t.text = s.substr(i, j - i);
      advance(j - i);
      out.push_back(t);
      continue;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i;
      while (j < s.size() &&
             (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.'))
        ++j;
      t.kind = Tok::Ident;
      t.text = s.substr(i, j - i);
      advance(j - i);
      out.push_back(t);
      continue;
    }
    err(std::string("unexpected character '") + c + "'");
  }
  if (!open.empty())
    throw Error(str_cat(file, ":", open.back().line, ":", open.back().col, ": '", open.back().text,
                        "' is not closed"));
  if (out.empty() || out.back().kind != Tok::Newline) out.push_back({Tok::Newline, "", line, col});
  out.push_back({Tok::End, "", line, col});
  return out;
}

}  // namespace kiln::kg
