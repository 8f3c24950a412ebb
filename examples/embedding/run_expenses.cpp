// The same project embedded in a program instead of a test: open it as `flowrt run` does,
// apply its events file, and print each context. Builds with CMake (flowrt::flowrt) or
// with pkg-config:
//   c++ -std=c++20 run_expenses.cpp $(pkg-config --static --cflags --libs flowrt) -o run_expenses
//   ./run_expenses examples/embedding
#include <flowrt/engine.h>

#include <iostream>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: run_expenses PROJECT_DIR\n";
    return 2;
  }
  flowrt::Result<flowrt::Project, flowrt::Diagnostics> project = flowrt::read_project(argv[1]);
  if (!project) {
    std::cerr << project.error().describe() << "\n";
    return 1;
  }
  flowrt::Result<std::unique_ptr<flowrt::Engine>, flowrt::Diagnostics> engine = flowrt::open_project(*project);
  if (!engine) {
    std::cerr << engine.error().describe() << "\n";
    return 1;
  }
  if (!project->files.events.empty()) {
    flowrt::Status ran = flowrt::Harness(**engine).run_file(project->files.events);
    if (!ran) {
      std::cerr << ran.message() << "\n";
      return 1;
    }
  }
  for (const flowrt::ContextRecord& c : (*engine)->contexts()) {
    std::cout << c.id() << " " << c.flow() << " " << c.status();
    for (const std::string& line : c.log_messages()) std::cout << " | " << line;
    std::cout << "\n";
  }
  return 0;
}
