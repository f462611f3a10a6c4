// main.cpp — the flashdemo executable: the command line of app.hpp, and its exit code.
#include "app.hpp"

int main(int argc, char** argv) {
  return fd::demos::run(argc, argv);
}
