// What a launcher announced against the world MPI made (runtime.hpp): the
// refusal of N one-rank copies, and its words.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "runtime/runtime.hpp"

namespace xb {
namespace {

// Sets the variables for one test and clears every launcher variable
// first; TearDown puts the process's own back (the suite may run as one
// process, and later tests must not see a launcher).
class LaunchEnv : public ::testing::Test {
 protected:
  static constexpr const char* kVars[] = {"PMI_SIZE",
                                          "PMI_RANK",
                                          "PMI_FD",
                                          "PMIX_RANK",
                                          "OMPI_COMM_WORLD_SIZE",
                                          "OMPI_COMM_WORLD_LOCAL_RANK",
                                          "MPI_LOCALRANKID",
                                          "SLURM_LOCALID",
                                          "LOCAL_RANK",
                                          "SLURM_STEP_NUM_TASKS",
                                          "SLURM_MPI_TYPE",
                                          "WORLD_SIZE",
                                          "RANK",
                                          "SLURM_PROCID",
                                          "OMPI_COMM_WORLD_RANK",
                                          "XFERBENCH_MPIEXEC"};
  void SetUp() override {
    for (const char* v : kVars) {
      if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
      unsetenv(v);
    }
  }
  void TearDown() override {
    for (const char* v : kVars) unsetenv(v);
    for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
  }

 private:
  std::vector<std::pair<std::string, std::string>> saved_;
};

const std::string kMpich =
    "MPICH Version:\t4.0.2\nMPICH Release date:\tThu Apr  7 12:34:45 CDT 2022";
const std::string kOmpi =
    "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4";

TEST(Launch, LibraryNames) {
  EXPECT_EQ(mpi_library_name(kMpich), "MPICH 4.0.2");
  EXPECT_EQ(mpi_library_name(kOmpi), "Open MPI v4.1.4");
  EXPECT_EQ(mpi_library_name("Intel(R) MPI Library 2021.10 for Linux* OS\n"),
            "Intel(R) MPI Library 2021.10 for Linux* OS");
  EXPECT_EQ(mpi_library_name(""), "an unnamed MPI");
}

TEST_F(LaunchEnv, TheMpiLaunchersVariablesComeFirst) {
  EXPECT_EQ(launch_seen().kind, LaunchSeen::Kind::none);
  setenv("WORLD_SIZE", "8", 1);
  EXPECT_EQ(launch_seen().kind, LaunchSeen::Kind::torchrun);
  // Under `salloc mpiexec`, srun's step holds hydra's proxies (one per node):
  // PMI_SIZE, the ranks, must win over it.
  setenv("SLURM_STEP_NUM_TASKS", "2", 1);
  setenv("SLURM_MPI_TYPE", "pmix", 1);
  EXPECT_EQ(launch_seen().name(), "srun --mpi=pmix");
  unsetenv("SLURM_MPI_TYPE");  // srun --mpi=none sets no PMI variable at all
  EXPECT_EQ(launch_seen().name(), "srun --mpi=none");
  setenv("PMIX_RANK", "0", 1);
  EXPECT_EQ(launch_seen().name(), "srun");
  setenv("PMI_SIZE", "4", 1);
  const LaunchSeen s = launch_seen();
  EXPECT_EQ(s.kind, LaunchSeen::Kind::pmi);
  EXPECT_EQ(s.size, 4);
  setenv("PMI_SIZE", "x", 1);  // not a count: ignored
  EXPECT_EQ(launch_seen().kind, LaunchSeen::Kind::srun);
}

TEST(Launch, AMatchingWorldIsNoMismatch) {
  LaunchSeen s{LaunchSeen::Kind::openmpi, 3, ""};
  EXPECT_EQ(world_mismatch(s, 3, kOmpi), "");
  EXPECT_EQ(world_mismatch(LaunchSeen{}, 1, kMpich), "");  // no launcher: a singleton
  EXPECT_EQ(world_mismatch(LaunchSeen{LaunchSeen::Kind::srun, 1, ""}, 1, kMpich), "");
}

TEST(Launch, OneRankWorldsAreRefusedWithTheFixForTheLibrary) {
  const std::string pmix_mpich =
      world_mismatch(LaunchSeen{LaunchSeen::Kind::srun, 2, "pmix"}, 1, kMpich);
  EXPECT_NE(pmix_mpich.find("srun --mpi=pmix started 2 processes, but each is alone in an MPI "
                            "world of 1 rank"),
            std::string::npos)
      << pmix_mpich;
  EXPECT_NE(pmix_mpich.find("built with MPICH 4.0.2"), std::string::npos);
  EXPECT_NE(pmix_mpich.find("srun --mpi=pmi2"), std::string::npos);
  const std::string none_ompi =
      world_mismatch(LaunchSeen{LaunchSeen::Kind::srun, 2, "none"}, 1, kOmpi);
  EXPECT_NE(none_ompi.find("srun --mpi=pmix"), std::string::npos) << none_ompi;
  const std::string mpirun_mpich =
      world_mismatch(LaunchSeen{LaunchSeen::Kind::openmpi, 4, ""}, 1, kMpich);
  EXPECT_NE(mpirun_mpich.find("Open MPI's mpirun started 4 processes"), std::string::npos);
  EXPECT_NE(mpirun_mpich.find("cmake --preset openmpi"), std::string::npos) << mpirun_mpich;
  const std::string hydra_ompi = world_mismatch(LaunchSeen{LaunchSeen::Kind::pmi, 2, ""}, 1, kOmpi);
  EXPECT_NE(hydra_ompi.find("Open MPI's mpirun"), std::string::npos) << hydra_ompi;
  const std::string torch =
      world_mismatch(LaunchSeen{LaunchSeen::Kind::torchrun, 2, ""}, 1, kMpich);
  EXPECT_NE(torch.find("ranks are MPI processes"), std::string::npos) << torch;
  // A world of several ranks is MPI's, whatever a variable left in the
  // environment says (srun --pty bash, then mpirun -n 4 inside it).
  EXPECT_EQ(world_mismatch(LaunchSeen{LaunchSeen::Kind::pmi, 2, ""}, 4, kOmpi), "");
}

TEST(Launch, SrunWithoutAPmiIsRefusedBeforeMpiStarts) {
  EXPECT_NE(launch_refused_before_init(LaunchSeen{LaunchSeen::Kind::srun, 2, "none"}, kOmpi)
                .find("srun --mpi=none started 2 processes"),
            std::string::npos);
  EXPECT_EQ(launch_refused_before_init(LaunchSeen{LaunchSeen::Kind::srun, 1, "none"}, kOmpi), "");
  EXPECT_EQ(launch_refused_before_init(LaunchSeen{LaunchSeen::Kind::srun, 2, "pmix"}, kOmpi), "");
  EXPECT_EQ(launch_refused_before_init(LaunchSeen{LaunchSeen::Kind::pmi, 2, ""}, kMpich), "");
  // MPICH's kind may form the world through Slurm's libpmi: MPI_Init decides.
  EXPECT_EQ(launch_refused_before_init(LaunchSeen{LaunchSeen::Kind::srun, 2, "none"}, kMpich), "");
}

TEST_F(LaunchEnv, LocalRankAndAStrayRank) {
  EXPECT_EQ(launcher_local_rank(), -1);
  setenv("SLURM_LOCALID", "3", 1);
  EXPECT_EQ(launcher_local_rank(), 3);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  EXPECT_EQ(launcher_local_rank(), 1);
  // RANK alone (a pod of a PyTorch job, a shell's leftover) is no launch:
  // errors must still be printed.
  setenv("RANK", "2", 1);
  EXPECT_EQ(launcher_rank(), -1);
  setenv("WORLD_SIZE", "4", 1);
  EXPECT_EQ(launcher_rank(), 2);
}

TEST_F(LaunchEnv, TheLauncherIsTheOneCMakeFound) {
  const std::vector<std::string> cmd = launcher_command(3);
  ASSERT_GE(cmd.size(), 3u);
  EXPECT_EQ(cmd.back(), "3");
  EXPECT_NE(cmd.front().find('/'), std::string::npos) << "an absolute path: " << cmd.front();
  setenv("XFERBENCH_MPIEXEC", "my-mpiexec", 1);
  EXPECT_EQ(launcher_command(2).front(), "my-mpiexec");
}

}  // namespace
}  // namespace xb
