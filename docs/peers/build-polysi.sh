#!/usr/bin/env bash
# Build PolySI (the PVLDB 2023 artifact) and MonoSAT from source, without
# Gradle (its wrapper downloads Gradle itself): MonoSAT with cmake, the Java
# jars from Maven Central with `mvn`, PolySI with `javac` and Lombok as its
# annotation processor. Everything goes under $PEERS (default: ../peers
# beside the repository); the result is $PEERS/polysi/bin/polysi, a wrapper
# that runs `java … Main "$@"` (`polysi audit --type=dbcop FILE`).
#
#   docs/peers/build-polysi.sh            # from the repository's top
#   PEERS=/tmp/peers docs/peers/build-polysi.sh
#
# Sources: POLYSI_GIT (the artifact repository, default GitHub) at
# POLYSI_REV, its folder artifact/PolySI; MONOSAT_GIT at MONOSAT_REV (the
# commit amnore/PolySI pins as its submodule; the artifact's copy of MonoSAT
# lacks src/). A local clone or bare mirror may be given for either.
# Needs: git, cmake, g++, libgmp-dev, zlib1g-dev, a JDK (11 or newer), mvn.
# Each step is skipped when its output exists; delete the folder to redo it.
set -euo pipefail

PEERS=${PEERS:-$(cd "$(dirname "$0")/../../.." && pwd)/peers}
POLYSI_GIT=${POLYSI_GIT:-https://github.com/hengxin/PolySI-PVLDB2023-Artifacts.git}
POLYSI_REV=${POLYSI_REV:-f16891b}
MONOSAT_GIT=${MONOSAT_GIT:-https://github.com/sambayless/monosat.git}
MONOSAT_REV=${MONOSAT_REV:-55af2fbf15b628eddfd74675d469689613c2a9dc}
JOBS=${JOBS:-2}
# Versions from the artifact's build.gradle; Lombok's is the one its Gradle
# plugin io.freefair.lombok 6.3.0 brings.
GUAVA=31.0.1-jre LANG3=3.12.0 PICOCLI=4.6.3 ROARING=0.9.35 LOMBOK=1.18.22

# cmake's FindJNI wants JAVA_HOME: the JDK that `javac` belongs to.
export JAVA_HOME=${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}
P=$PEERS/polysi
mkdir -p "$P"
cd "$P"

# A bare mirror or a URL: clone once, then export the revision wanted.
export_tree() { # GIT REV SUBDIR DEST
    local git=$1 rev=$2 sub=$3 dest=$4
    [ -d "$dest" ] && return 0
    local clone="$P/git-$(basename "$dest")"
    [ -d "$clone" ] || git clone --bare --quiet "$git" "$clone"
    mkdir -p "$dest.tmp"
    git -C "$clone" archive "$rev" $sub | tar x -C "$dest.tmp"
    mv "$dest.tmp" "$dest"
}
export_tree "$POLYSI_GIT" "$POLYSI_REV" artifact/PolySI src
export_tree "$MONOSAT_GIT" "$MONOSAT_REV" "" monosat-src

# 1. MonoSAT: the shared library with its JNI part, and monosat.jar.
if [ ! -f monosat-build/libmonosat.so ]; then
    cmake -B monosat-build -S monosat-src -DJAVA=ON -DBUILD_STATIC=OFF \
        -DCMAKE_BUILD_TYPE=Release -DSHOW_GIT_VERSION=OFF >cmake.log
    cmake --build monosat-build -j"$JOBS" >>cmake.log
fi

# 2. The jars: a throwaway pom, then copy-dependencies (with transitive ones).
if [ ! -d lib ]; then
    cat >deps-pom.xml <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>peers</groupId><artifactId>polysi-deps</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>com.google.guava</groupId><artifactId>guava</artifactId><version>$GUAVA</version></dependency>
    <dependency><groupId>org.apache.commons</groupId><artifactId>commons-lang3</artifactId><version>$LANG3</version></dependency>
    <dependency><groupId>info.picocli</groupId><artifactId>picocli</artifactId><version>$PICOCLI</version></dependency>
    <dependency><groupId>org.roaringbitmap</groupId><artifactId>RoaringBitmap</artifactId><version>$ROARING</version></dependency>
    <dependency><groupId>org.projectlombok</groupId><artifactId>lombok</artifactId><version>$LOMBOK</version></dependency>
  </dependencies>
</project>
EOF
    mvn -q -f deps-pom.xml dependency:copy-dependencies -DoutputDirectory="$P/lib.tmp"
    mv lib.tmp lib
fi

# 3. PolySI's classes (Lombok at compile time only: its annotations and
# processor).
if [ ! -d classes ]; then
    cp=$(ls lib/*.jar | grep -v lombok | tr '\n' :)monosat-build/monosat.jar
    find src/artifact/PolySI/src/main/java -name '*.java' >sources.txt
    javac -nowarn -encoding UTF-8 --release 11 -d classes.tmp -cp "$cp:lib/lombok-$LOMBOK.jar" \
        -processorpath lib/lombok-$LOMBOK.jar @sources.txt
    mv classes.tmp classes
fi

# 4. The wrapper. POLYSI_JAVA_OPTS e.g. "-Xmx8g" (default: the JVM's).
mkdir -p bin
cat >bin/polysi <<'EOF'
#!/usr/bin/env bash
P=$(cd "$(dirname "$0")/.." && pwd)
cp=$P/classes:$(ls "$P"/lib/*.jar | grep -v lombok | tr '\n' :)$P/monosat-build/monosat.jar
exec java ${POLYSI_JAVA_OPTS:-} -Djava.library.path="$P/monosat-build" -cp "$cp" Main "$@"
EOF
chmod +x bin/polysi
echo "built: $P/bin/polysi"
