// The fuzz targets' corpora as regression tests: each file named on the command line (a
// directory stands for its files) goes once through LLVMFuzzerTestOneInput, in name order.
// A target aborts on a broken rule, so a failing input fails the test; the exit status is 0
// when every input ran, 2 when an argument could not be read or named no input at all.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> inputs;
  for (int i = 1; i < argc; i++) {
    std::error_code ec;
    const std::filesystem::path arg(argv[i]);
    const size_t before = inputs.size();
    if (std::filesystem::is_directory(arg, ec)) {
      for (std::filesystem::directory_iterator it(arg, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file()) inputs.push_back(it->path());
    } else if (std::filesystem::is_regular_file(arg, ec)) {
      inputs.push_back(arg);
    }
    if (ec || inputs.size() == before) {
      std::fprintf(stderr, "%s: %s\n", argv[i], ec ? ec.message().c_str() : "no input there");
      return 2;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "no inputs\n");
    return 2;
  }
  std::sort(inputs.begin(), inputs.end());
  for (const auto& path : inputs) {
    std::ifstream in(path, std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: unreadable\n", path.c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("%zu inputs ran\n", inputs.size());
  return 0;
}
