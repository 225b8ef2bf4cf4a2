//! The kernels' rates at the encoder's shapes, per path:
//! `cargo bench -p ragbox-kernels --bench gemm`. GFLOP/s of each product (2·m·k·n
//! per run), serial and on the pool, beside the nanoseconds per element of the
//! row kernels, so a change to a kernel shows in isolation.

use ragbox_kernels::gemm::{self, Epilogue, Packed};
use ragbox_kernels::rows::{self, Activation};
use ragbox_kernels::sample::random;
use ragbox_kernels::{Isa, cpu_features};
use ragbox_kernels::{bf16, int8};
use std::time::Instant;

/// Best seconds of `runs` calls of `f`.
fn best(runs: usize, mut f: impl FnMut()) -> f64 {
    f();
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// Prints the rates of a product of `flop` a run, best of `runs` of
/// `serial` and of `pooled`, each given C; `tag` names its precision.
fn print_rates(
    (isa, name, flop, runs): (Isa, &str, f64, usize),
    tag: &str,
    c: &mut [f32],
    serial: impl Fn(&mut [f32]),
    pooled: impl Fn(&mut [f32]),
) {
    let serial = best(runs, || serial(c));
    let pooled = best(runs, || pooled(c));
    println!(
        "{:16} {name:28} serial {:6.1} GFLOP/s   pool {:6.1} GFLOP/s{tag}",
        isa.name(),
        flop / serial / 1e9,
        flop / pooled / 1e9
    );
}

fn main() {
    println!("CPU features: {}; threads: {}", cpu_features().join(" "), rayon::current_num_threads());
    // (name, m, k, n, activation): 2048 tokens through MiniLM-L6's matmuls.
    let shapes = [
        ("qkv 2048x384x1152", 2048, 384, 1152, false),
        ("ffn-in+gelu 2048x384x1536", 2048, 384, 1536, true),
        ("ffn-out 2048x1536x384", 2048, 1536, 384, false),
        ("query 20x384x1536", 20, 384, 1536, false),
        ("scores 230x32x230", 230, 32, 230, false),
        ("context 230x230x32", 230, 230, 32, false),
    ];
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).build().expect("a thread pool");
    for isa in Isa::available() {
        println!(
            "{:16} peak (register-only multiply-adds on the pool): {:.1} GFLOP/s",
            isa.name(),
            ragbox_kernels::peak::gflops(isa)
        );
        for &(name, m, k, n, gelu) in &shapes {
            let a = random(m * k, 1);
            let w = random(n * k, 2);
            let bias = random(n, 3);
            let b = Packed::transposed(&w, n, k, k);
            let mut c = vec![0.0f32; m * n];
            let epi = if gelu { Epilogue::BiasActivation(&bias, Activation::Gelu) } else { Epilogue::Bias(&bias) };
            let flop = 2.0 * (m * k * n) as f64;
            let runs = (2e10 / flop).clamp(3.0, 2000.0) as usize;
            let rates = (isa, name, flop, runs);
            print_rates(
                rates,
                "",
                &mut c,
                |c| gemm::gemm_serial(isa, &a, k, &b, c, n, epi),
                |c| gemm::gemm(isa, &a, k, &b, c, n, epi),
            );
            // The lower-precision products run serial on a pool of one thread.
            let mut lower = |tag, product: &(dyn Fn(&mut [f32]) + Sync)| {
                print_rates(rates, tag, &mut c, |c| one.install(|| product(c)), product)
            };
            // The feed-forward products also run in int8 where the CPU has VNNI.
            if isa.has_int8() && k >= 384 && n >= 384 {
                let b = int8::Packed::transposed(&w, n, k, k);
                lower("   (int8)", &|c| int8::gemm(isa, &a, k, &b, c, n, epi));
            }
            // The weight products (not attention's) also run in bf16 where the CPU has it.
            if isa.has_bf16() && k >= 384 && n >= 384 {
                let b = bf16::Packed::transposed(&w, n, k, k);
                lower("   (bf16)", &|c| bf16::gemm(isa, &a, k, &b, c, n, epi));
            }
        }
        let mut x = random(1 << 20, 4);
        let zero = vec![0.0f32; 1536];
        let t = best(5, || rows::bias_activation(isa, &mut x[..1536 * 682], 1536, &zero, Activation::Gelu));
        let per = t / (1536.0 * 682.0) * 1e9;
        let s = best(5, || x.chunks_exact_mut(256).for_each(|r| rows::softmax(isa, r)));
        let gamma = vec![1.0f32; 384];
        let res = random(1 << 20, 5);
        let l = best(5, || {
            rows::add_layer_norm(isa, &mut x[..384 * 2730], &res[..384 * 2730], &gamma, &zero[..384], 1e-12)
        });
        println!(
            "{:16} gelu {per:.2} ns/elem   softmax {:.2} ns/elem   add+layernorm {:.2} ns/elem",
            isa.name(),
            s / (1 << 20) as f64 * 1e9,
            l / (384.0 * 2730.0) * 1e9
        );
    }
}
