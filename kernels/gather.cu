      // ${comment}
      ${index_t} ${name}_idx = 0;
      int ${name}_ok = 1;
${dims}
      const ${ctype} ${name} = ${name}_ok ? ${load} : ${fill};
